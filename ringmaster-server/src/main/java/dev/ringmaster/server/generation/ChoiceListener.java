package dev.ringmaster.server.generation;

import dev.ringmaster.engine.batch.PrefillTimes;
import dev.ringmaster.engine.batch.RequestOutcome;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.engine.batch.TokenListener;
import java.util.concurrent.BlockingQueue;

/**
 * The engine-side half of one choice: it only queues each token id (with the time it came) and the
 * outcome for the request's own thread, which detokenizes, matches stop strings and writes the
 * response ({@link ChoiceDecoder}). Runs on the engine thread, so it does nothing else.
 *
 * <p>Once the request thread has given up on the choice ({@link #abandon}), the outcome goes
 * straight to the metrics, so an abandoned request is still counted.
 */
final class ChoiceListener implements TokenListener {
  /** What the engine thread hands over. */
  sealed interface Raw {
    /** The choice the item belongs to. */
    int index();
  }

  /** A token and when it came ({@link System#nanoTime}). */
  record Token(int index, TokenEvent event, long nanos) implements Raw {}

  /** The engine's prefill times, queued just before the first token. */
  record Prefilled(int index, PrefillTimes times) implements Raw {}

  /** The end of the choice and when it came. */
  record End(int index, RequestOutcome outcome, long nanos) implements Raw {}

  private final int index;
  private final BlockingQueue<Raw> out;
  private final LatencyObserver observer;
  private final long submitted = System.nanoTime();
  private boolean abandoned;

  ChoiceListener(int index, BlockingQueue<Raw> out, LatencyObserver observer) {
    this.index = index;
    this.out = out;
    this.observer = observer;
  }

  /** When the choice was submitted ({@link System#nanoTime}). */
  long submitted() {
    return submitted;
  }

  @Override
  public boolean onToken(TokenEvent event) {
    out.add(new Token(index, event, System.nanoTime()));
    return true;
  }

  @Override
  public void onPrefilled(PrefillTimes times) {
    out.add(new Prefilled(index, times));
  }

  @Override
  public synchronized void onFinish(RequestOutcome outcome) {
    long now = System.nanoTime();
    if (abandoned) {
      observer.finished(ChoiceDecoder.unread(index, outcome, submitted, now));
    } else {
      out.add(new End(index, outcome, now));
    }
  }

  /** The request thread reads no more: a later outcome goes to the metrics directly. */
  synchronized void abandon() {
    abandoned = true;
  }
}
