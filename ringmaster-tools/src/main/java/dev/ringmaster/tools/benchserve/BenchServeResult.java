package dev.ringmaster.tools.benchserve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.List;

/**
 * One finished run.
 *
 * @param config what was run
 * @param model the model name the requests carried
 * @param rows the requests sent
 * @param outputs what each measured, in the order of {@code rows}
 * @param metrics the figures
 * @param serverInfo the server's {@code /get_server_info} answer, or null where it has none
 * @param acceptLength the speculative decoding accept length the server reported, or null
 * @param serverTtft the server's mean TTFT and its stages over the timed requests, in milliseconds
 *     ({@link ServerLatencyScrape#breakdown}), or null where its {@code /metrics} has none
 */
public record BenchServeResult(
    BenchServeConfig config,
    String model,
    List<DatasetRow> rows,
    List<RequestOutput> outputs,
    ServingMetrics metrics,
    JsonNode serverInfo,
    Double acceptLength,
    ObjectNode serverTtft) {

  /** A run without the server's TTFT breakdown. */
  public BenchServeResult(
      BenchServeConfig config,
      String model,
      List<DatasetRow> rows,
      List<RequestOutput> outputs,
      ServingMetrics metrics,
      JsonNode serverInfo,
      Double acceptLength) {
    this(config, model, rows, outputs, metrics, serverInfo, acceptLength, null);
  }

  /** The first failed request's error, or null when all succeeded. */
  public String firstError() {
    return outputs.stream()
        .filter(o -> !o.success())
        .map(RequestOutput::error)
        .findFirst()
        .orElse(null);
  }
}
