package dev.ringmaster.engine.batch;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class ServingDefaultsTest {
  private static final long GIB = 1L << 30;

  @Test
  void runningRequestsAreCappedByTheLargestGraph() {
    // An H200's pool (3.3M tokens), a 163,840-token context, graphs up to 256.
    assertThat(ServingDefaults.maxRunningRequests(3_355_328, 163_840, List.of(1, 2, 4, 8, 256)))
        .isEqualTo(256);
  }

  @Test
  void runningRequestsAreCappedByHalfTheKvPool() {
    assertThat(ServingDefaults.maxRunningRequests(100, 4096, List.of(1, 8, 256))).isEqualTo(50);
    assertThat(ServingDefaults.maxRunningRequests(1, 4096, List.of(8))).isEqualTo(1);
  }

  @Test
  void runningRequestsAreCappedBySglangsRequestSlots() {
    // 100M tokens at context 4096 would be 12.5M slots: clamped to 4096.
    assertThat(ServingDefaults.maxRunningRequests(100_000_000, 4096, List.of(8192)))
        .isEqualTo(4096);
    // A tiny pool against a long context still gets SGLang's floor of 2048 slots.
    assertThat(ServingDefaults.maxRunningRequests(40_000, 1_000_000, List.of(8192)))
        .isEqualTo(2048);
  }

  @Test
  void withoutGraphsTheCpuBoundApplies() {
    assertThat(ServingDefaults.maxRunningRequests(1_000_000, 4096, List.of()))
        .isEqualTo(ServingDefaults.CPU_MAX_RUNNING_REQUESTS);
  }

  @Test
  void chunkedPrefillFollowsSglangsMemoryClasses() {
    assertThat(ServingDefaults.gpuChunkedPrefillSize(16 * GIB)).isEqualTo(2048);
    assertThat(ServingDefaults.gpuChunkedPrefillSize(24 * GIB)).isEqualTo(2048);
    assertThat(ServingDefaults.gpuChunkedPrefillSize(40 * GIB)).isEqualTo(4096);
    assertThat(ServingDefaults.gpuChunkedPrefillSize(80 * GIB)).isEqualTo(8192);
    assertThat(ServingDefaults.gpuChunkedPrefillSize(141_000_000_000L)).isEqualTo(8192);
    assertThat(ServingDefaults.gpuChunkedPrefillSize(180 * GIB)).isEqualTo(16384);
  }

  @Test
  void theDescriptionSaysWhereEachValueCameFrom() {
    String d = ServingDefaults.describe(256, true, 8192, true, 3_355_328, List.of(1, 256));
    assertThat(d)
        .contains(
            "max running requests 256 (from 3355328 KV tokens and decode graphs up to batch 256)")
        .contains("chunked prefill 8192 (default)");
    assertThat(ServingDefaults.describe(8, false, 64, false, 10, List.of()))
        .contains("8 (flag)")
        .contains("64 (flag)");
  }
}
