package dev.ringmaster.engine.batch;

import dev.ringmaster.engine.Sampler;
import dev.ringmaster.engine.TokenCounts;
import dev.ringmaster.engine.constraint.ConstraintState;
import dev.ringmaster.runtime.KvCache;
import dev.ringmaster.runtime.sampling.SamplingBatch;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executor;

/**
 * The engine thread's state for one request: all its tokens (prompt, then generated), its cache and
 * (whose block table holds its KV blocks). Tokens {@code [planned, tokens)} are the input of its
 * next step: the rest of the prompt while prefilling, the last generated token while decoding, or
 * everything again after a preemption dropped the cache.
 */
final class Sequence {
  final EngineRequest request;
  final RequestHandle handle;

  /** Seen tokens with output counts, kept only when the request has penalties. */
  private final TokenCounts counts;

  final Set<Integer> stopIds;
  final int promptLength;
  final int maxTokens;
  private int[] tokens;
  private int length;
  KvCache cache;

  /**
   * Tokens the cache holds once every submitted step has run: the engine's own view, so the next
   * step can be planned while the model is still appending to the cache.
   */
  int planned;

  /** Whether a submitted step samples this sequence's next token (not appended yet). */
  boolean awaitingToken;

  /**
   * The prefix-cache pages this sequence's cache starts with or has handed to the cache, root
   * first, each locked by it; its first {@code prefixNodes.size()} pages are cached.
   */
  List<RadixCache.Node> prefixNodes = new ArrayList<>();

  /**
   * Positions whose keys and values came from the prefix cache and were never computed for this
   * request: the prompt tokens its first admission took from the cache. A re-admission after a
   * preemption adds only cached positions beyond {@link #reached}, which it never held before (in
   * practice none: it held every position up to its last token).
   */
  int cachedTokens;

  /** Positions this request's cache held at most, over all its admissions. */
  int reached;

  /** Whether the pages of the current prefill went to the prefix cache already. */
  boolean prefillCached;

  /** Admission order, and how often a later request was admitted first (the LPM policy). */
  long arrival;

  /** When the first step with its prompt tokens went to the model (0 before; see PrefillTimes). */
  long firstStepNanos;

  /** Steps that ran its prompt tokens before its first token came. */
  int prefillSteps;

  int bypassed;
  int preemptions;
  boolean finished;

  Sequence(EngineRequest request, RequestHandle handle, int contextLength) {
    this.request = request;
    this.handle = handle;
    this.counts = request.params().hasPenalties() ? new TokenCounts(request.promptIds()) : null;
    this.stopIds = new HashSet<>(request.params().stopTokenIds());
    if (!request.params().ignoreEos()) {
      for (int e : request.eosIds()) {
        stopIds.add(e);
      }
    }
    this.promptLength = request.promptIds().length;
    this.maxTokens = Math.min(promptLength + request.params().maxNewTokens(), contextLength);
    this.tokens = Arrays.copyOf(request.promptIds(), Math.max(16, promptLength + 16));
    this.length = promptLength;
  }

  /** Prompt plus generated tokens. */
  int length() {
    return length;
  }

  int generated() {
    return length - promptLength;
  }

  int token(int i) {
    return tokens[i];
  }

  /** The token array itself (only the first {@link #length} count): a drafter's context. */
  int[] tokenArray() {
    return tokens;
  }

  void append(int token) {
    if (length == tokens.length) {
      tokens = Arrays.copyOf(tokens, tokens.length * 2);
    }
    tokens[length++] = token;
    if (counts != null) {
      counts.addOutput(token);
    }
    if (request.constraint() != null) {
      request.constraint().accept(token);
    }
  }

  /**
   * Appends this sequence's sampling row (for its next output token) to {@code batch}; a
   * constraint's mask that is not cached is computed on {@code masks} while the forward runs.
   */
  void addSamplingRow(SamplingBatch batch, Executor masks) {
    Sampler.addRow(batch, request.params(), generated(), counts, request.topLogprobs());
    if (request.constraint() != null) {
      batch.setAllowedTokens(request.constraint().allowedTokensAsync(masks));
    }
  }

  /**
   * Jump-forward decoding: the tokens to append in place of the sampled {@code token}, it and the
   * bytes its constraint forces after it (at most {@code maxBytes}) as the tokenizer splits them,
   * cut at max tokens; null for plain decoding (no constraint, logprobs asked for, a stop token, or
   * nothing forced). Run through the model in one extend step, they replace as many decode steps.
   */
  int[] forcedRun(int token, int maxBytes) {
    ConstraintState c = request.constraint();
    int room = maxTokens - length;
    if (c == null || request.topLogprobs() >= 0 || stopIds.contains(token) || room < 1) {
      return null;
    }
    int[] run = c.jumpForward(token, maxBytes);
    if (run == null || (run.length == 1 && run[0] == token)) {
      return null;
    }
    for (int t : run) {
      if (stopIds.contains(t)) {
        return null;
      }
    }
    return run.length > room ? Arrays.copyOf(run, room) : run;
  }

  /** Whether the request's constraint allows no further token. */
  boolean constraintComplete() {
    return request.constraint() != null && request.constraint().isComplete();
  }

  /**
   * KV blocks in this sequence's block table: its own and the prefix cache's it shares (0 without a
   * cache).
   */
  int heldBlocks() {
    return cache == null ? 0 : cache.blockCount();
  }

  /** Tokens in the cache once the submitted steps have run. */
  int cached() {
    return cache == null ? 0 : planned;
  }

  /** Prompt plus generated tokens, counting the one a submitted step is sampling. */
  int projectedLength() {
    return length + (awaitingToken ? 1 : 0);
  }

  /** Tokens waiting to go through the model, once the submitted steps have run. */
  int pending() {
    return projectedLength() - cached();
  }
}
