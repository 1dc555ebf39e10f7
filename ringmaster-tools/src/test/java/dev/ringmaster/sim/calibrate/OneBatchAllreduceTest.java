package dev.ringmaster.sim.calibrate;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ringmaster.sim.hw.AllreduceAlgorithm;
import org.junit.jupiter.api.Test;

/**
 * A one-batch run is simulated with the allreduce it recorded (NCCL where none is recorded) and
 * with its MoE backend under expert parallelism (none where none is recorded).
 */
class OneBatchAllreduceTest {
  private static MeasurementFile.OneBatch parse(String allreduceField) {
    String json =
        "{\"model\":\"configs/deepseek-v2-lite.json\",\"device\":\"cuda\",\"tp_size\":2,"
            + "\"ep_size\":1,"
            + allreduceField
            + "\"results\":[{\"batch_size\":1,\"input_len\":512,\"output_len\":128,"
            + "\"prefill_ms\":50,\"prefill_tokens_per_s\":10000,\"decode_median_ms\":3.7,"
            + "\"decode_tokens_per_s\":270,\"collectives_per_decode_step\":{},"
            + "\"profile_ms\":{\"decode bs=1\":{\"collectives\":0.4}}}]}";
    return (MeasurementFile.OneBatch) MeasurementsIo.parseAny(json);
  }

  @Test
  void theRecordedPeerKernelIsSimulated() {
    for (String a : new String[] {"oneshot", "twoshot", "fused"}) {
      MeasurementFile.OneBatch run = parse("\"allreduce\":\"" + a + "\",");
      assertThat(run.allreduce()).isEqualTo(a);
      assertThat(
              OneBatchSteps.servingConfig(run, run.results().getFirst(), OneBatchSteps.quantOf(run))
                  .allreduce())
          .isEqualTo(AllreduceAlgorithm.parse(a));
    }
  }

  @Test
  void autoNcclAndUnrecordedRunsAreSimulatedAsNccl() {
    for (String field : new String[] {"\"allreduce\":\"auto\",", "\"allreduce\":\"nccl\",", ""}) {
      MeasurementFile.OneBatch run = parse(field);
      assertThat(
              OneBatchSteps.servingConfig(run, run.results().getFirst(), OneBatchSteps.quantOf(run))
                  .allreduce())
          .as(field)
          .isEqualTo(AllreduceAlgorithm.NCCL);
    }
  }

  @Test
  void theRecordedMoeBackendIsSimulated() {
    MeasurementFile.OneBatch a2a = parse("\"moe_a2a_backend\":\"all-to-all\",");
    assertThat(a2a.moeA2aBackend()).isEqualTo("all-to-all");
    assertThat(
            OneBatchSteps.servingConfig(a2a, a2a.results().getFirst(), OneBatchSteps.quantOf(a2a))
                .a2a())
        .isEqualTo(dev.ringmaster.sim.serve.A2aBackend.ALL_TO_ALL);
    for (String field : new String[] {"\"moe_a2a_backend\":\"none\",", ""}) {
      MeasurementFile.OneBatch run = parse(field);
      assertThat(
              OneBatchSteps.servingConfig(run, run.results().getFirst(), OneBatchSteps.quantOf(run))
                  .a2a())
          .as(field)
          .isEqualTo(dev.ringmaster.sim.serve.A2aBackend.NONE);
    }
  }
}
