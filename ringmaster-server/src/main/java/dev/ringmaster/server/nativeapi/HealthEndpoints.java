package dev.ringmaster.server.nativeapi;

import dev.ringmaster.engine.SamplingParams;
import dev.ringmaster.engine.batch.FinishReason;
import dev.ringmaster.server.ServerContext;
import dev.ringmaster.server.api.ApiException;
import dev.ringmaster.server.generation.ChoiceEvent;
import dev.ringmaster.server.generation.ChoiceRequest;
import dev.ringmaster.server.generation.Generation;
import dev.ringmaster.server.http.Endpoint;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** {@code GET /health} (the server accepts work) and {@code GET /health_generate} (one token). */
public final class HealthEndpoints {
  private static final long GENERATE_TIMEOUT_S = 30;
  private final ServerContext ctx;

  /** The endpoints over a server context. */
  public HealthEndpoints(ServerContext ctx) {
    this.ctx = ctx;
  }

  /** 200 with an empty body while the engine accepts requests, else 503. */
  public Endpoint health() {
    return ex -> {
      if (!ctx.model().engine().isAccepting()) {
        throw ApiException.unavailable("shutting_down", "the server is shutting down", 5);
      }
      ex.okEmpty();
    };
  }

  /** Runs one greedy token through the engine: 200 when it comes back, else 503. */
  public Endpoint healthGenerate() {
    return ex -> {
      int prompt = ctx.model().tokenizer().bosId().orElse(0);
      ChoiceRequest probe =
          new ChoiceRequest(0, new int[] {prompt}, SamplingParams.greedy(1), List.of(), -1);
      Generation g = ctx.start(List.of(probe));
      CompletableFuture<ChoiceEvent.Done> done =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  for (ChoiceEvent e; (e = g.next()) != null; ) {
                    if (e instanceof ChoiceEvent.Done d) {
                      return d;
                    }
                  }
                  return null;
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                  return null;
                }
              },
              Thread::startVirtualThread);
      try {
        ChoiceEvent.Done d = done.get(GENERATE_TIMEOUT_S, TimeUnit.SECONDS);
        if (d == null || d.reason() == FinishReason.ERROR || d.completionTokens() != 1) {
          throw ApiException.unavailable("unhealthy", "the engine failed to generate a token", 5);
        }
      } catch (TimeoutException | ExecutionException e) {
        g.cancel();
        throw ApiException.unavailable("unhealthy", "the engine did not generate in time", 5);
      }
      ex.okEmpty();
    };
  }
}
