package dev.ringmaster.engine.batch;

/** Why a request stopped generating. */
public enum FinishReason {
  /** An end-of-sequence or stop token, or the listener asked to stop (a stop string matched). */
  STOP,
  /** The token limit or the model's context was reached. */
  LENGTH,
  /** Cancelled by the caller (for example the client disconnected) or by shutdown. */
  ABORT,
  /** A fault while computing this request; see {@link RequestOutcome#error()}. */
  ERROR
}
