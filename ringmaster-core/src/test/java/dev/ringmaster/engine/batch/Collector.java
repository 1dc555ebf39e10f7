package dev.ringmaster.engine.batch;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntPredicate;

/** A test listener: records tokens and completes a future with the outcome. */
final class Collector implements TokenListener {
  final List<Integer> tokens = new ArrayList<>();
  final List<TokenEvent> events = new ArrayList<>();
  final CompletableFuture<RequestOutcome> done = new CompletableFuture<>();
  private final IntPredicate keepGoing;

  Collector() {
    this(t -> true);
  }

  Collector(IntPredicate keepGoing) {
    this.keepGoing = keepGoing;
  }

  @Override
  public synchronized boolean onToken(TokenEvent event) {
    tokens.add(event.token());
    events.add(event);
    return keepGoing.test(event.token());
  }

  @Override
  public void onFinish(RequestOutcome outcome) {
    done.complete(outcome);
  }

  RequestOutcome await() throws Exception {
    return done.get(60, TimeUnit.SECONDS);
  }

  synchronized int[] ids() {
    return tokens.stream().mapToInt(Integer::intValue).toArray();
  }
}
