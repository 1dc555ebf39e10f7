package dev.ringmaster.server;

import dev.ringmaster.server.generation.ChoiceRequest;
import dev.ringmaster.server.generation.Generation;
import dev.ringmaster.server.generation.RequestRegistry;
import dev.ringmaster.server.metrics.ServerMetrics;
import java.util.List;

/**
 * What endpoints share: the served model, the server's limits, its metrics and the requests in
 * flight.
 *
 * @param model the served model
 * @param config the server's configuration
 * @param metrics the metrics registry
 * @param requests the generations in flight by request id
 */
public record ServerContext(
    ServingModel model, ServerConfig config, ServerMetrics metrics, RequestRegistry requests) {

  /** Starts the choices of one request in the engine, not registered for abort. */
  public Generation start(List<ChoiceRequest> choices) {
    return Generation.start(model.engine(), model.tokenizer(), model.eosIds(), choices, metrics);
  }

  /**
   * Starts the choices of one HTTP request in the engine, registered under {@code rid} for abort.
   *
   * @param receivedNanos when the request arrived ({@link System#nanoTime}; 0 when unknown)
   */
  public Generation start(List<ChoiceRequest> choices, String rid, long receivedNanos) {
    return Generation.start(
        model.engine(),
        model.tokenizer(),
        model.eosIds(),
        choices,
        metrics,
        requests,
        rid,
        receivedNanos);
  }
}
