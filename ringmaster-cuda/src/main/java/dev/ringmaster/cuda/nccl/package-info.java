/**
 * NCCL through the FFM API: the bindings ({@link dev.ringmaster.cuda.nccl.Nccl}), the unique id and
 * its TCP exchange between nodes ({@link dev.ringmaster.cuda.nccl.UniqueIdExchange}, flags as
 * SGLang's {@code --nnodes}, {@code --node-rank}, {@code --dist-init-addr}).
 */
package dev.ringmaster.cuda.nccl;
