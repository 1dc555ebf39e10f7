package dev.ringmaster.model.multinode;

import java.io.DataInputStream;
import java.io.IOException;

/**
 * Everything a node needs to run one forward step on its ranks, as node 0 sends it. A step of no
 * tokens only replays {@code cacheOps}.
 *
 * @param step the step's number (1, 2, ...), checked in the answer
 * @param greedy whether node 0 called {@code forwardGreedy} (the GPU computes argmax on the device,
 *     so every node must take the same path)
 * @param tokens the batch's token ids
 * @param seqStart the batch layout's sequence starts
 * @param positions each token's position
 * @param logitRows rows whose logits (or greedy tokens) are wanted
 * @param cacheIds per sequence, node 0's id of its cache (a node creates a cache the first time it
 *     sees an id)
 * @param cacheLengths per sequence, the cache's length before the step (node 0 may have rolled a
 *     cache back since the last step)
 * @param cacheOps what node 0 did to its caches and shared pages since the last step, {@link
 *     CacheOps}' encoding, replayed before the step runs
 */
record StepMessage(
    long step,
    boolean greedy,
    int[] tokens,
    int[] seqStart,
    int[] positions,
    int[] logitRows,
    int[] cacheIds,
    int[] cacheLengths,
    int[] cacheOps) {

  byte[] encode() {
    return ControlChannel.payload(
        out -> {
          out.writeLong(step);
          out.writeBoolean(greedy);
          ControlChannel.writeInts(out, tokens);
          ControlChannel.writeInts(out, seqStart);
          ControlChannel.writeInts(out, positions);
          ControlChannel.writeInts(out, logitRows);
          ControlChannel.writeInts(out, cacheIds);
          ControlChannel.writeInts(out, cacheLengths);
          ControlChannel.writeInts(out, cacheOps);
        });
  }

  static StepMessage decode(byte[] payload) throws IOException {
    DataInputStream in = new ControlChannel.Message(ControlChannel.STEP, payload).data();
    return new StepMessage(
        in.readLong(),
        in.readBoolean(),
        ControlChannel.readInts(in),
        ControlChannel.readInts(in),
        ControlChannel.readInts(in),
        ControlChannel.readInts(in),
        ControlChannel.readInts(in),
        ControlChannel.readInts(in),
        ControlChannel.readInts(in));
  }
}
