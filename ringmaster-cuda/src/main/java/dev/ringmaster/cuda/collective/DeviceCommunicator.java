package dev.ringmaster.cuda.collective;

import dev.ringmaster.cuda.driver.CudaStream;
import dev.ringmaster.parallel.AllReduceAlgorithm;
import dev.ringmaster.parallel.Communicator;

/**
 * One rank's collectives over device memory: the sibling of the CPU {@link
 * dev.ringmaster.parallel.ProcessGroup} with the same operations, where buffers are device pointers
 * of f32 values and every operation is queued on the given stream (so it is captured into a CUDA
 * graph when the stream is capturing). Called from the rank's GPU thread; every rank calls the same
 * operations in the same order with matching sizes.
 */
public interface DeviceCommunicator extends Communicator, AutoCloseable {

  /** Sums {@code count} floats at {@code buf} over ranks, in place, with the algorithm in force. */
  default void allReduce(long buf, long count, CudaStream stream) {
    allReduce(buf, count, allReduceAlgorithm(), stream);
  }

  /**
   * Sums in place with {@code algorithm}: NCCL, ONESHOT/TWOSHOT/FUSED (peer-memory kernels; NCCL
   * where unavailable or too large), RING (NCCL, which runs ring or tree itself) or AUTO.
   */
  void allReduce(long buf, long count, AllReduceAlgorithm algorithm, CudaStream stream);

  /** The concrete algorithm an allreduce of {@code bytes} would use with {@code algorithm}. */
  AllReduceAlgorithm resolve(long bytes, AllReduceAlgorithm algorithm);

  /**
   * The allreduce after a row-parallel layer with what follows it: {@code residual += sum over
   * ranks of x}, then {@code out = weight * rmsnorm(residual)} for {@code rows} rows of {@code
   * hidden} floats. One fused kernel where the algorithm in force resolves to a peer-memory one;
   * otherwise the allreduce (in place on {@code x}) and then an add + RMSNorm kernel.
   */
  default void allReduceAddRmsNorm(
      long x,
      long residual,
      long out,
      long weight,
      int rows,
      int hidden,
      float eps,
      CudaStream stream) {
    allReduceAddRmsNorm(x, residual, out, weight, rows, hidden, eps, allReduceAlgorithm(), stream);
  }

  /** As above with {@code algorithm} in place of the one in force (FUSED asks for the kernel). */
  void allReduceAddRmsNorm(
      long x,
      long residual,
      long out,
      long weight,
      int rows,
      int hidden,
      float eps,
      AllReduceAlgorithm algorithm,
      CudaStream stream);

  /** Gathers {@code countPerRank} floats of every rank into {@code recv}, in rank order. */
  void allGather(long send, long recv, long countPerRank, CudaStream stream);

  /**
   * Sums {@code recvCount * worldSize()} floats laid out by rank and leaves this rank's block of
   * {@code recvCount} in {@code recv}.
   */
  void reduceScatter(long send, long recv, long recvCount, CudaStream stream);

  /**
   * Uneven all-to-all (MoE dispatch/combine): {@code send} holds {@code sendCounts[d]} floats for
   * each destination in rank order; {@code recv} receives {@code recvCounts[s]} from each source in
   * rank order. Counts may be zero; {@code recvCounts[s]} must equal rank s's {@code
   * sendCounts[rank()]}.
   */
  void allToAll(long send, long[] sendCounts, long recv, long[] recvCounts, CudaStream stream);

  /** Copies {@code count} floats at {@code buf} from rank {@code root} to every rank. */
  void broadcast(long buf, long count, int root, CudaStream stream);

  /** Releases the communicator (NCCL's, and the peer buffers). */
  @Override
  void close();
}
