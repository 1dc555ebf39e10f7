package dev.ringmaster.cuda.nccl;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * An {@code ncclUniqueId}: the 128 opaque bytes rank 0 creates and every rank passes to {@code
 * ncclCommInitRank}. It names rank 0's bootstrap socket, so it travels to the other nodes (see
 * {@link UniqueIdExchange}) before any communicator can form.
 */
public final class NcclUniqueId {
  /** {@code NCCL_UNIQUE_ID_BYTES}. */
  public static final int BYTES = 128;

  private final byte[] bytes;

  /** Wraps a copy of exactly {@link #BYTES} bytes. */
  public NcclUniqueId(byte[] bytes) {
    if (bytes.length != BYTES) {
      throw new IllegalArgumentException("an ncclUniqueId has 128 bytes, not " + bytes.length);
    }
    this.bytes = bytes.clone();
  }

  /** A copy of the bytes. */
  public byte[] bytes() {
    return bytes.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof NcclUniqueId other && Arrays.equals(bytes, other.bytes);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(bytes);
  }

  @Override
  public String toString() {
    return "NcclUniqueId[" + HexFormat.of().formatHex(bytes, 0, 8) + "...]";
  }
}
