package dev.ringmaster.server;

import dev.ringmaster.server.metrics.ServerMetrics;
import java.util.List;

/**
 * What endpoints share: the served model, the server's limits and its metrics.
 *
 * @param model the served model
 * @param config the server's configuration
 * @param metrics the metrics registry
 */
public record ServerContext(ServingModel model, ServerConfig config, ServerMetrics metrics) {

  /** Starts the choices of one request in the engine. */
  public dev.ringmaster.server.generation.Generation start(
      List<dev.ringmaster.server.generation.ChoiceRequest> choices) {
    return dev.ringmaster.server.generation.Generation.start(
        model.engine(), model.tokenizer(), model.eosIds(), choices, metrics);
  }
}
