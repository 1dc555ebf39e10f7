package dev.ringmaster.engine.batch;

import dev.ringmaster.engine.spec.Draft;
import dev.ringmaster.engine.spec.DraftVerifier;
import dev.ringmaster.engine.spec.Drafter;
import dev.ringmaster.engine.spec.HiddenStateDrafter;
import dev.ringmaster.engine.spec.ModelDrafter;
import dev.ringmaster.engine.spec.NgramDrafter;
import dev.ringmaster.engine.spec.RowDistribution;
import dev.ringmaster.engine.spec.ServingSpeculation;
import dev.ringmaster.engine.spec.SpeculationController;
import dev.ringmaster.engine.spec.SpeculationSnapshot;
import dev.ringmaster.engine.spec.SpeculativeConfig;
import dev.ringmaster.engine.spec.SpeculativeGenerator;
import dev.ringmaster.engine.spec.SpeculativePolicy;
import dev.ringmaster.engine.spec.TabulatedSpeculationCost;
import dev.ringmaster.runtime.DraftHead;
import dev.ringmaster.runtime.HiddenCapture;
import dev.ringmaster.runtime.LanguageModel;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * The batch engine's speculation: after the scheduler planned a step, the decode rows of eligible
 * requests get a draft (their own drafter: the n-gram lookup, or the draft model with caches of
 * their own) and the blocks for it; after the forward, each draft is verified with the request's
 * own sampling rule and seed. Requests with penalties, an output constraint or logprobs decode
 * plainly. Only the engine thread calls it.
 */
final class SpeculativeDrafts implements AutoCloseable {
  private final SpeculativeConfig config;
  private final LanguageModel draftModel;

  /** The MTP layer or EAGLE-3 head the drafts come from, else null. */
  private final DraftHead head;

  private final SpeculationController controller;
  private final int vocab;
  private final Map<Sequence, State> states = new IdentityHashMap<>();

  /** A request's drafter and verifier. */
  private record State(Drafter drafter, DraftVerifier verifier) {}

  /** Speculation over {@code target}; measures its costs when the policy is auto and none given. */
  SpeculativeDrafts(ServingSpeculation spec, LanguageModel target, BatchConfig batch) {
    if (spec.draftModel() != null
        && spec.draftModel().config().vocabSize() != target.config().vocabSize()) {
      throw new IllegalArgumentException(
          "the draft model's vocabulary has "
              + spec.draftModel().config().vocabSize()
              + " tokens but the target's has "
              + target.config().vocabSize()
              + ": a draft model must share the target's tokenizer");
    }
    this.config = spec.config();
    this.draftModel = spec.draftModel();
    this.head =
        switch (config.algorithm()) {
          case NEXTN -> SpeculativeGenerator.requireNextn(target);
          case EAGLE3 -> spec.draftHead();
          case NGRAM, STANDALONE -> null;
        };
    this.vocab = target.config().vocabSize();
    var cost = spec.cost();
    if (cost == null && spec.policy() == SpeculativePolicy.AUTO) {
      List<Integer> graphs = target.decodeGraphBatchSizes();
      int[] sizes =
          graphs.isEmpty()
              ? TabulatedSpeculationCost.batchSizesFor(batch.maxRunningRequests())
              : graphs.stream().mapToInt(Integer::intValue).toArray();
      cost = TabulatedSpeculationCost.measure(target, sizes, config.numDraftTokens());
    }
    this.controller =
        new SpeculationController(
            config.algorithm(), spec.policy(), config.numDraftTokens(), spec.margin(), cost);
  }

  SpeculationSnapshot snapshot() {
    return controller.snapshot();
  }

  /** Whether the next step of {@code batch} sequences would speculate (nothing is counted). */
  boolean wouldDraft(int batch) {
    return controller.peek(batch) > 0;
  }

  private static boolean eligible(Sequence s) {
    return !s.request.params().hasPenalties()
        && s.request.constraint() == null
        && s.request.topLogprobs() < 0;
  }

  /** Counts a step planned while the previous one ran (it never carries drafts) as plain. */
  void countPlain(Step step) {
    for (int i = 0; i < step.seqs().size(); i++) {
      if (isDecodeRow(step, i) && eligible(step.seqs().get(i))) {
        controller.countPlain();
        return;
      }
    }
  }

  /**
   * The step with drafts on the decode rows the policy and the pool allow ({@code step} itself when
   * none); null stays null.
   */
  Step attach(Step step, Scheduler scheduler) {
    if (step == null) {
      return null;
    }
    List<Sequence> seqs = step.seqs();
    boolean anyDecode = false;
    for (int i = 0; i < seqs.size(); i++) {
      anyDecode |= isDecodeRow(step, i) && eligible(seqs.get(i));
    }
    if (!anyDecode) {
      return step;
    }
    int k = controller.decide(seqs.size());
    if (k == 0) {
      return step;
    }
    Draft[] drafts = new Draft[seqs.size()];
    int[] counts = step.counts().clone();
    boolean any = false;
    long t0 = System.nanoTime();
    int proposed = 0;
    for (int i = 0; i < seqs.size(); i++) {
      Sequence s = seqs.get(i);
      if (!isDecodeRow(step, i) || !eligible(s)) {
        continue;
      }
      // A verify yields up to k + 1 tokens: never draft past max tokens or the draft's context.
      int limit = s.maxTokens - s.length() - 1;
      if (draftModel != null) {
        limit = Math.min(limit, draftModel.config().maxPositionEmbeddings() - s.length());
      }
      int kk = Math.min(k, limit);
      if (kk < 1) {
        continue;
      }
      Draft d = state(s).drafter().propose(s.tokenArray(), s.length(), kk);
      proposed += d.length();
      if (d.length() == 0 || !scheduler.reserveDraft(s, d.length())) {
        continue;
      }
      drafts[i] = d;
      counts[i] = 1 + d.length();
      any = true;
    }
    controller.observeDraftTime(System.nanoTime() - t0, proposed);
    return any ? new Step(seqs, counts, step.starts(), step.samples(), drafts) : step;
  }

  /** A row that runs only its sequence's newest token and samples the next. */
  private static boolean isDecodeRow(Step step, int i) {
    Sequence s = step.seqs().get(i);
    return step.samples()[i] && step.counts()[i] == 1 && step.starts()[i] == s.length() - 1;
  }

  private State state(Sequence s) {
    return states.computeIfAbsent(
        s,
        q -> {
          RowDistribution rule = RowDistribution.of(q.request.params(), vocab);
          Drafter drafter =
              switch (config.algorithm()) {
                case NGRAM -> new NgramDrafter(config.ngramMinMatch(), config.ngramMaxMatch());
                case NEXTN, EAGLE3 -> new HiddenStateDrafter(head, rule);
                case STANDALONE ->
                    new ModelDrafter(
                        draftModel,
                        RowDistribution.of(q.request.params(), draftModel.config().vocabSize()));
              };
          return new State(drafter, new DraftVerifier(rule, vocab));
        });
  }

  /**
   * Whether every draft of rows {@code [from, to)} is verified by the target's raw argmax alone
   * ({@link DraftVerifier#argmaxOnly}), so the step's forward may return argmax rows.
   */
  boolean argmaxOnly(Step step, int from, int to) {
    for (int i = from; i < to; i++) {
      if (step.draft(i) != null && !state(step.seqs().get(i)).verifier().argmaxOnly()) {
        return false;
      }
    }
    return true;
  }

  /**
   * Verifies row {@code i}'s draft against its rows of {@code out} ({@code draft + 1} rows from
   * {@code logitRow}: argmax tokens where the forward returned them, else logits) and returns the
   * tokens that stand: the accepted drafts and the target's own token.
   */
  int[] verify(Step step, int i, StepOutput out, int logitRow) {
    Sequence s = step.seqs().get(i);
    Draft d = step.draft(i);
    int rows = d.length() + 1;
    DraftVerifier verifier = state(s).verifier();
    DraftVerifier.Outcome o;
    if (out.argmax() != null) {
      o = verifier.verifyArgmax(d, out.argmax(), logitRow);
    } else {
      float[] own = Arrays.copyOfRange(out.logits(), logitRow * vocab, (logitRow + rows) * vocab);
      o = verifier.verify(d, own, s.generated());
    }
    controller.observe(d.length(), o.accepted());
    int[] run = Arrays.copyOf(d.tokens(), o.accepted() + 1);
    run[o.accepted()] = o.token();
    return run;
  }

  /** Whether the forwards must return hidden states (the MTP or EAGLE-3 drafters are fed them). */
  boolean needsHidden() {
    return head != null;
  }

  /** The hidden states the forwards return when {@link #needsHidden}. */
  HiddenCapture hiddenCapture() {
    return head.capture();
  }

  /**
   * Hands an eligible sequence's drafter the target's hidden states of its {@code rows} positions
   * from {@code start} that stand (its prefill chunk, its decode row, or its verify row's accepted
   * part).
   */
  void observeHidden(Sequence s, int start, float[] hidden, int offset, int rows) {
    if (head != null && rows > 0 && eligible(s)) {
      state(s).drafter().observeHidden(start, hidden, offset, rows);
    }
  }

  /** Drops a finished request's drafter (its draft caches go back). */
  void forget(Sequence s) {
    State st = states.remove(s);
    if (st != null) {
      st.drafter().close();
    }
  }

  @Override
  public void close() {
    for (State st : states.values()) {
      st.drafter().close();
    }
    states.clear();
  }
}
