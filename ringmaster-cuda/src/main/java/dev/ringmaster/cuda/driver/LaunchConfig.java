package dev.ringmaster.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;

/**
 * A {@code CUlaunchConfig} for {@code cuLaunchKernelEx} holding one attribute, {@code
 * CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 1}: a launch through it is a programmatic
 * dependent launch (PDL), whose blocks may start while the previous kernel of the stream finishes
 * (the kernel must wait in {@code griddepcontrol.wait} before touching that kernel's data, as every
 * kernel of this project does first). The config and its attribute live in one native block
 * allocated once; {@link #set} rewrites the grid, block, shared memory and stream fields in place,
 * so a launch allocates nothing. Not thread-safe: one per kernel, used from the GPU's thread.
 *
 * <p>Layouts as in {@code cuda.h} of CUDA 12 and 13 (x86-64 / aarch64 LP64): {@code
 * CUlaunchAttributeValue} is a union padded to 64 bytes ({@code char pad[64]}, 8-byte aligned),
 * {@code CUlaunchAttribute} is {@code {CUlaunchAttributeID id; char pad[8 - sizeof(id)];
 * CUlaunchAttributeValue value}} (72 bytes, value at 8), and {@code CUlaunchConfig} is seven {@code
 * unsigned int}s, {@code CUstream hStream} at 32, {@code CUlaunchAttribute* attrs} at 40 and {@code
 * unsigned int numAttrs} at 48 (56 bytes with tail padding).
 */
public final class LaunchConfig {
  /**
   * {@code CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION} of {@code CUlaunchAttributeID}.
   */
  public static final int CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6;

  /** {@code CUlaunchAttributeValue}: a union of 64 bytes, 8-byte aligned (it holds pointers). */
  public static final StructLayout ATTRIBUTE_VALUE =
      MemoryLayout.structLayout(
              JAVA_INT.withName("programmaticStreamSerializationAllowed"),
              MemoryLayout.paddingLayout(60))
          .withByteAlignment(8)
          .withName("CUlaunchAttributeValue");

  /** {@code CUlaunchAttribute}: the 4-byte id, 4 bytes of padding, the value union. */
  public static final StructLayout ATTRIBUTE =
      MemoryLayout.structLayout(
              JAVA_INT.withName("id"),
              MemoryLayout.paddingLayout(4),
              ATTRIBUTE_VALUE.withName("value"))
          .withName("CUlaunchAttribute");

  /** {@code CUlaunchConfig}. */
  public static final StructLayout CONFIG =
      MemoryLayout.structLayout(
              JAVA_INT.withName("gridDimX"),
              JAVA_INT.withName("gridDimY"),
              JAVA_INT.withName("gridDimZ"),
              JAVA_INT.withName("blockDimX"),
              JAVA_INT.withName("blockDimY"),
              JAVA_INT.withName("blockDimZ"),
              JAVA_INT.withName("sharedMemBytes"),
              MemoryLayout.paddingLayout(4),
              JAVA_LONG.withName("hStream"),
              ADDRESS.withName("attrs"),
              JAVA_INT.withName("numAttrs"),
              MemoryLayout.paddingLayout(4))
          .withName("CUlaunchConfig");

  private static final long GRID_X = offset(CONFIG, "gridDimX");
  private static final long GRID_Y = offset(CONFIG, "gridDimY");
  private static final long GRID_Z = offset(CONFIG, "gridDimZ");
  private static final long BLOCK_X = offset(CONFIG, "blockDimX");
  private static final long BLOCK_Y = offset(CONFIG, "blockDimY");
  private static final long BLOCK_Z = offset(CONFIG, "blockDimZ");
  private static final long SHARED = offset(CONFIG, "sharedMemBytes");
  private static final long STREAM = offset(CONFIG, "hStream");
  private static final long ATTRS = offset(CONFIG, "attrs");
  private static final long NUM_ATTRS = offset(CONFIG, "numAttrs");
  private static final long ATTR_ID = offset(ATTRIBUTE, "id");
  private static final long ATTR_VALUE = offset(ATTRIBUTE, "value");

  private final MemorySegment config;
  private final MemorySegment attribute;

  /** A config with the programmatic-serialization attribute set; its memory lives with it. */
  public LaunchConfig() {
    Arena arena = Arena.ofAuto();
    config = arena.allocate(CONFIG);
    attribute = arena.allocate(ATTRIBUTE);
    attribute.set(JAVA_INT, ATTR_ID, CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION);
    attribute.set(JAVA_INT, ATTR_VALUE, 1); // programmaticStreamSerializationAllowed
    config.set(ADDRESS, ATTRS, attribute);
    config.set(JAVA_INT, NUM_ATTRS, 1);
  }

  private static long offset(StructLayout layout, String field) {
    return layout.byteOffset(MemoryLayout.PathElement.groupElement(field));
  }

  /** Writes the launch geometry and stream; returns this config. */
  public LaunchConfig set(
      int gridX,
      int gridY,
      int gridZ,
      int blockX,
      int blockY,
      int blockZ,
      int sharedBytes,
      long stream) {
    config.set(JAVA_INT, GRID_X, gridX);
    config.set(JAVA_INT, GRID_Y, gridY);
    config.set(JAVA_INT, GRID_Z, gridZ);
    config.set(JAVA_INT, BLOCK_X, blockX);
    config.set(JAVA_INT, BLOCK_Y, blockY);
    config.set(JAVA_INT, BLOCK_Z, blockZ);
    config.set(JAVA_INT, SHARED, sharedBytes);
    config.set(JAVA_LONG, STREAM, stream);
    return this;
  }

  /** The {@code const CUlaunchConfig*} to pass to {@code cuLaunchKernelEx}. */
  public MemorySegment segment() {
    return config;
  }

  /** The attribute array the config points to (one element). */
  MemorySegment attributes() {
    return attribute;
  }
}
