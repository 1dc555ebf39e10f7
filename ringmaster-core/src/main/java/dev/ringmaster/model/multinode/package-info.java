/**
 * One model over several nodes (JVMs), as SGLang runs it with {@code --nnodes}, {@code --node-rank}
 * and {@code --dist-init-addr}: node 0 owns the engine (scheduler, sampler, HTTP server) and drives
 * the model; every other node holds its share of the tensor-parallel ranks and runs the same
 * forward steps in lock-step.
 *
 * <p>The control plane is one TCP connection from every node to node 0. At start the nodes meet at
 * {@code --dist-init-addr} ({@link dev.ringmaster.model.multinode.Cluster}): each says who it is
 * and what it runs (a {@link dev.ringmaster.model.multinode.Fingerprint} of the model files and the
 * flags that must agree), and node 0 answers with every node's data-plane address. Then each node
 * loads its ranks ({@link dev.ringmaster.model.multinode.NodeBackend}: TCP collectives on the CPU,
 * NCCL on GPUs) and reports ready. Each step node 0 sends the step's inputs (token ids, batch
 * layout, logit rows, which cache each sequence uses and its length, and what node 0 did to its
 * caches and the prefix cache's shared pages since the last step, replayed by id on every node) and
 * every node answers when its ranks are done; {@link dev.ringmaster.model.multinode.DistributedLm}
 * is node 0's side, a {@link dev.ringmaster.runtime.LanguageModel} the engine uses like any other.
 *
 * <p>Failures are never silent: a node that fails, or whose connection drops, fails the step on
 * node 0 with a {@link dev.ringmaster.model.multinode.NodeFailureException} naming the node, the
 * data plane of every node is aborted so no rank stays blocked, and the model refuses later steps.
 * Node 0 closing (or exiting) stops the other nodes.
 */
package dev.ringmaster.model.multinode;
