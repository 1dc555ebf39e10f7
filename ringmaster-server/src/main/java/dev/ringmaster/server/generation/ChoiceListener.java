package dev.ringmaster.server.generation;

import dev.ringmaster.engine.batch.FinishReason;
import dev.ringmaster.engine.batch.RequestOutcome;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.engine.batch.TokenListener;
import dev.ringmaster.model.tokenizer.StreamDecoder;
import dev.ringmaster.model.tokenizer.Tokenizer;
import java.util.concurrent.BlockingQueue;

/**
 * The engine-side half of one choice: detokenizes each token, applies stop strings, and posts
 * {@link ChoiceEvent}s to the queue its HTTP request thread reads. Runs on the engine thread.
 */
final class ChoiceListener implements TokenListener {
  private final int index;
  private final StreamDecoder decoder;
  private final StopMatcher stops;
  private final BlockingQueue<ChoiceEvent> out;
  private final LatencyObserver observer;
  private final long submitted = System.nanoTime();
  private long firstToken;
  private long lastToken;
  private Object matchedStop;

  ChoiceListener(
      ChoiceRequest request,
      Tokenizer tokenizer,
      BlockingQueue<ChoiceEvent> out,
      LatencyObserver observer) {
    this.index = request.index();
    this.decoder = tokenizer.newStreamDecoder(true);
    this.stops = new StopMatcher(request.stopStrings());
    this.out = out;
    this.observer = observer;
  }

  @Override
  public boolean onToken(TokenEvent event) {
    long now = System.nanoTime();
    if (firstToken == 0) {
      firstToken = now;
      observer.firstToken((now - submitted) / 1e9);
    } else {
      observer.interToken((now - lastToken) / 1e9);
    }
    lastToken = now;
    if (event.stopToken()) {
      matchedStop = event.token();
      out.add(new ChoiceEvent.Delta(index, "", event, true));
      return true;
    }
    String text = stops.push(decoder.next(event.token()));
    out.add(new ChoiceEvent.Delta(index, text, event, false));
    if (stops.matched() != null) {
      matchedStop = stops.matched();
      return false;
    }
    return true;
  }

  @Override
  public void onFinish(RequestOutcome outcome) {
    if (outcome.reason() != FinishReason.ERROR && stops.matched() == null) {
      String tail = stops.push(decoder.flush());
      tail += stops.flush();
      if (!tail.isEmpty()) {
        out.add(new ChoiceEvent.Delta(index, tail, null, false));
      }
    }
    long now = System.nanoTime();
    ChoiceEvent.Done done =
        new ChoiceEvent.Done(
            index,
            outcome.reason(),
            matchedStop,
            outcome.promptTokens(),
            outcome.completionTokens(),
            outcome.error(),
            (now - submitted) / 1e9,
            firstToken == 0 ? Double.NaN : (firstToken - submitted) / 1e9);
    observer.finished(done);
    out.add(done);
  }
}
