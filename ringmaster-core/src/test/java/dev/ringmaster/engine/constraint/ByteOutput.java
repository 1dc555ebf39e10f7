package dev.ringmaster.engine.constraint;

import dev.ringmaster.engine.batch.RequestOutcome;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.engine.batch.TokenListener;
import java.io.ByteArrayOutputStream;
import java.util.concurrent.CompletableFuture;

/** A test listener: one generation's bytes (end-of-sequence tokens left out) and its outcome. */
final class ByteOutput implements TokenListener {
  final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
  final CompletableFuture<RequestOutcome> done = new CompletableFuture<>();
  private final TokenVocabulary vocab;

  ByteOutput(TokenVocabulary vocab) {
    this.vocab = vocab;
  }

  @Override
  public synchronized boolean onToken(TokenEvent event) {
    if (!vocab.isEos(event.token())) {
      bytes.writeBytes(vocab.bytes(event.token()));
    }
    return true;
  }

  @Override
  public void onFinish(RequestOutcome outcome) {
    done.complete(outcome);
  }
}
