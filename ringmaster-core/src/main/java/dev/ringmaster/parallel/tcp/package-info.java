/**
 * Process groups whose ranks live in different JVMs (nodes) and exchange data over TCP, in the
 * manner of gloo: every pair of ranks holds one socket, and the collectives are real algorithms
 * over those sockets (ring, one-shot, two-shot and recursive-doubling allreduce, direct allgather,
 * reduce-scatter, all-to-all and broadcast), computing every sum in the same order as the
 * in-process {@link dev.ringmaster.parallel.LocalWorld}, so results are bit-identical on all ranks
 * and equal to the in-process world's.
 *
 * <p>{@link dev.ringmaster.parallel.tcp.TcpWorld} is one node's share of such a world: it accepts
 * and opens the connections of its ranks and runs them on platform threads. Failures never hang: a
 * rank that fails closes its node's sockets, so peers blocked in a read wake with an error that
 * names the lost rank; a peer that stops answering fails the read after the configured timeout.
 */
package dev.ringmaster.parallel.tcp;
