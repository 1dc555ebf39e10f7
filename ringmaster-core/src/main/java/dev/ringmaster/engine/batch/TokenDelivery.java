package dev.ringmaster.engine.batch;

import dev.ringmaster.runtime.sampling.SampledTokens;
import java.util.function.LongSupplier;

/**
 * How a landed step's tokens reach their requests (engine thread only): sampled tokens with their
 * logprobs, verified draft runs after the cache is rolled back to them, jump-forward runs in place
 * of a sampled token; each appended, handed to the request's listener, and the request finished
 * where it stops, reaches its length or its listener fails.
 */
final class TokenDelivery {
  /** Forced bytes appended at most in one jump-forward run. */
  static final int JUMP_FORWARD_MAX_BYTES = 64;

  private final BatchConfig config;
  private final Scheduler scheduler;
  private final SpeculativeDrafts speculation; // null: no speculation
  private final int vocab;
  private final LongSupplier landed;
  private final System.Logger log;

  TokenDelivery(
      BatchConfig config,
      Scheduler scheduler,
      SpeculativeDrafts speculation,
      int vocab,
      LongSupplier landed,
      System.Logger log) {
    this.config = config;
    this.scheduler = scheduler;
    this.speculation = speculation;
    this.vocab = vocab;
    this.landed = landed;
    this.log = log;
  }

  /** Hands out the tokens of rows {@code from .. to-1} of a landed step. */
  void emit(Step step, int from, int to, StepOutput out) {
    SampledTokens sampled = out.sampled();
    int row = 0; // among the plainly sampled rows
    int logitRow = 0; // among all requested logit rows
    int tokenRow = 0; // among all the step's tokens (hidden-state rows)
    for (int i = from; i < to; i++) {
      Sequence s = step.seqs().get(i);
      int first = tokenRow;
      tokenRow += step.counts()[i];
      if (!step.samples()[i]) {
        if (out.hidden() != null) {
          speculation.observeHidden(s, step.starts()[i], out.hidden(), first, step.counts()[i]);
        }
        continue;
      }
      if (step.draft(i) != null) {
        int[] run = speculation.verify(step, i, out, logitRow);
        if (out.hidden() != null) {
          // The last token's row and the accepted drafts' rows stand.
          speculation.observeHidden(s, step.starts()[i], out.hidden(), first, run.length);
        }
        logitRow += step.counts()[i];
        emitRun(s, step.starts()[i], run);
        continue;
      }
      if (out.hidden() != null) {
        speculation.observeHidden(s, step.starts()[i], out.hidden(), first, step.counts()[i]);
      }
      logitRow++;
      int r = row++;
      int token = sampled.tokens()[r];
      boolean stop = s.stopIds.contains(token);
      int top = Math.min(s.request.topLogprobs(), vocab);
      TokenEvent event =
          top < 0
              ? new TokenEvent(token, s.generated(), stop, Float.NaN, new int[0], new float[0])
              : new TokenEvent(
                  token,
                  s.generated(),
                  stop,
                  sampled.logprobs()[r],
                  sampled.topIds(r, top),
                  sampled.topLogprobs(r, top));
      int[] run = config.jumpForward() ? s.forcedRun(token, JUMP_FORWARD_MAX_BYTES) : null;
      if (run == null) {
        deliver(s, token, event);
      } else {
        deliverForced(s, event, run);
      }
    }
  }

  /**
   * Hands out a jump-forward run in place of the sampled token: the sampled event where the run
   * starts with that token, events without logprobs for the rest. None of them is in the cache yet,
   * so the next step runs them all.
   */
  private void deliverForced(Sequence s, TokenEvent sampled, int[] run) {
    for (int j = 0; j < run.length && !s.finished; j++) {
      int t = run[j];
      boolean same = j == 0 && t == sampled.token();
      deliver(
          s,
          t,
          same
              ? sampled
              : new TokenEvent(t, s.generated(), false, Float.NaN, new int[0], new float[0]));
    }
  }

  /**
   * Hands out the tokens a verified draft yielded, cut after a stop token or at max tokens, once
   * the cache is rolled back to plain decoding's state after them (the last token and the kept
   * drafts) and the blocks of the rejected drafts are returned.
   *
   * @param start the cache length before the verify step (the last token's position)
   */
  private void emitRun(Sequence s, int start, int[] run) {
    int kept = 0;
    while (kept < run.length) {
      int t = run[kept++];
      if (s.stopIds.contains(t) || s.length() + kept >= s.maxTokens) {
        break;
      }
    }
    s.cache.setLength(start + kept);
    s.planned = start + kept;
    scheduler.trimBlocks(s);
    for (int j = 0; j < kept && !s.finished; j++) {
      int t = run[j];
      boolean stop = s.stopIds.contains(t);
      deliver(s, t, new TokenEvent(t, s.generated(), stop, Float.NaN, new int[0], new float[0]));
    }
  }

  /** Appends one sampled token, signals the listener, and finishes the request if it ends. */
  private void deliver(Sequence s, int token, TokenEvent event) {
    s.awaitingToken = false;
    if (s.generated() == 0) {
      try {
        s.request
            .listener()
            .onPrefilled(new PrefillTimes(s.firstStepNanos, landed.getAsLong(), s.prefillSteps));
      } catch (RuntimeException e) {
        finish(s, FinishReason.ERROR, e);
        return;
      }
    }
    scheduler.cachePrefill(s);
    try {
      s.append(token);
    } catch (IllegalStateException e) {
      finish(s, FinishReason.ERROR, e);
      return;
    }
    boolean more;
    try {
      more = s.request.listener().onToken(event);
    } catch (RuntimeException e) {
      finish(s, FinishReason.ERROR, e);
      return;
    }
    if (event.stopToken() || !more || s.constraintComplete()) {
      finish(s, FinishReason.STOP, null);
    } else if (s.length() >= s.maxTokens) {
      finish(s, FinishReason.LENGTH, null);
    }
  }

  /**
   * Ends a request once: caches its pages where it ended normally, removes it from the scheduler
   * and tells its listener.
   */
  void finish(Sequence s, FinishReason reason, Throwable error) {
    if (s.finished) {
      return;
    }
    s.finished = true;
    if (speculation != null) {
      speculation.forget(s);
    }
    if (reason == FinishReason.STOP || reason == FinishReason.LENGTH) {
      if (s.cache != null && s.cache.length() >= s.length()) {
        // A listener stopped inside a verified run: drop the positions past its last token.
        s.cache.setLength(s.length() - 1);
      }
      scheduler.cachePages(s); // between steps: every stored position is final
    }
    scheduler.remove(s);
    RequestOutcome outcome =
        new RequestOutcome(
            reason, s.promptLength, s.generated(), s.preemptions, s.cachedTokens, error);
    try {
      s.request.listener().onFinish(outcome);
    } catch (RuntimeException e) {
      log.log(System.Logger.Level.WARNING, "listener of " + s.handle.id() + " threw on finish", e);
    }
  }
}
