package dev.ringmaster.model.multinode;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A node loading its ranks on a thread of its own, so that the control connections can be watched
 * meanwhile: a node that fails to load (or vanishes) while the others are still connecting their
 * ranks then stops everyone at once, instead of after the connect timeout.
 */
final class Loading {
  private static final Duration GRACE = Duration.ofSeconds(10);

  private final NodeBackend backend;
  private final CompletableFuture<LocalNode> result = new CompletableFuture<>();

  Loading(NodeBackend backend, Cluster cluster) {
    this.backend = backend;
    Thread.ofPlatform()
        .daemon()
        .name("ringmaster-node-load")
        .start(
            () -> {
              try {
                result.complete(backend.load(cluster));
              } catch (Throwable t) {
                result.completeExceptionally(t);
              }
            });
  }

  CompletableFuture<LocalNode> future() {
    return result;
  }

  /**
   * Gives the load up: asks the backend to stop waiting for other nodes and waits a little for it;
   * whatever it still loads is closed when it is done.
   */
  void abandon() {
    backend.cancel();
    result.whenComplete(
        (node, e) -> {
          if (node != null) {
            node.close();
          }
        });
    try {
      result.get(GRACE.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      // it failed or is still busy: either way it is no longer this run's
    }
  }

  /** Reads the next message of {@code c} on a thread of its own. */
  static CompletableFuture<ControlChannel.Message> next(ControlChannel c, String name) {
    CompletableFuture<ControlChannel.Message> f = new CompletableFuture<>();
    Thread.ofPlatform()
        .daemon()
        .name(name)
        .start(
            () -> {
              try {
                f.complete(c.read());
              } catch (IOException | RuntimeException e) {
                f.completeExceptionally(e);
              }
            });
    return f;
  }

  /** Waits until {@code first} or {@code all} completes (normally or not). */
  static void awaitEither(CompletableFuture<?> all, CompletableFuture<?> first) {
    try {
      CompletableFuture.anyOf(all, first).get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new NodeFailureException("interrupted while the nodes started", e);
    } catch (ExecutionException e) {
      // the callers look at the futures themselves
    }
  }
}
