package dev.ringmaster.model.multinode;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * One other node as node 0 sees it: its control connection, the step it owes, and whether it is
 * gone. A thread of its own reads the node's answers for the whole run, so a node that vanishes
 * between steps is noticed (and this node's ranks woken) at once.
 */
final class FollowerLink {
  final int node;
  final ControlChannel channel;
  private final String name;
  private final PrintStream log;
  private final Consumer<Throwable> abortLocal;
  private final BooleanSupplier closing;
  private long expectedStep;
  private CompletableFuture<Void> pending;
  volatile String lost;
  volatile Throwable lostCause;
  volatile NodeFailureException stepError;
  volatile boolean stepErrorIsConsequence;
  volatile int heldCaches;
  volatile int heldPages;

  /**
   * Node {@code node} ({@code name} in messages) over {@code channel}; {@code abortLocal} wakes
   * node 0's ranks when it is lost, unless {@code closing} says node 0 is shutting the run down.
   */
  FollowerLink(
      int node,
      String name,
      ControlChannel channel,
      PrintStream log,
      Consumer<Throwable> abortLocal,
      BooleanSupplier closing) {
    this.node = node;
    this.name = name;
    this.channel = channel;
    this.log = log;
    this.abortLocal = abortLocal;
    this.closing = closing;
  }

  /** Starts the thread that reads the node's answers. */
  void startReading() {
    Thread.ofPlatform().daemon().name("ringmaster-node" + node + "-control").start(this::readLoop);
  }

  /**
   * Sends step {@code step} ({@code message}) and waits until the node has run it: this node's
   * rank-group worker for the node runs it.
   *
   * @throws NodeFailureException naming the node when it reports an error or is lost
   */
  void runStep(long step, byte[] message) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    expect(step, done);
    try {
      channel.send(ControlChannel.STEP, message);
    } catch (IOException e) {
      lost("could not send the step: " + ControlChannel.reason(e), e);
    }
    try {
      done.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new NodeFailureException("interrupted while waiting for " + name, e);
    } catch (ExecutionException e) {
      Throwable cause = NodeFailures.unwrap(e);
      throw cause instanceof NodeFailureException n
          ? n
          : new NodeFailureException(name + " failed: " + NodeFailures.describe(cause), cause);
    }
  }

  private synchronized void expect(long step, CompletableFuture<Void> done) {
    expectedStep = step;
    pending = done;
    stepError = null;
    if (lost != null) {
      done.completeExceptionally(new NodeFailureException(lost, lostCause));
    }
  }

  private void readLoop() {
    try {
      while (true) {
        ControlChannel.Message m = channel.read();
        if (m.type() != ControlChannel.DONE) {
          throw new IOException("unexpected message " + m.type());
        }
        DataInputStream in = m.data();
        long step = in.readLong();
        boolean ok = in.readBoolean();
        String error = ok ? null : ControlChannel.readString(in);
        boolean consequence = !ok && in.readBoolean();
        heldCaches = in.readInt();
        heldPages = in.readInt();
        finish(step, error, consequence);
      }
    } catch (IOException e) {
      if (!closing.getAsBoolean()) {
        lost(
            "disconnected (its process exited or the network failed): " + ControlChannel.reason(e),
            e);
      }
    }
  }

  private synchronized void finish(long step, String error, boolean consequence)
      throws IOException {
    if (step != expectedStep || pending == null) {
      throw new IOException("answered step " + step + " while step " + expectedStep + " ran");
    }
    CompletableFuture<Void> p = pending;
    pending = null;
    if (error == null) {
      p.complete(null);
    } else {
      stepError = new NodeFailureException(name + " failed: " + error);
      stepErrorIsConsequence = consequence;
      p.completeExceptionally(stepError);
    }
  }

  /** The node is gone: wakes this node's ranks and fails the step it owes. */
  void lost(String why, Throwable cause) {
    CompletableFuture<Void> p;
    synchronized (this) {
      if (lost != null) {
        return;
      }
      lost = name + " " + why;
      lostCause = cause;
      p = pending;
      pending = null;
    }
    log.println("ringmaster: " + lost);
    // Its ranks are gone: wake this node's ranks if a step is waiting on them.
    abortLocal.accept(new NodeFailureException(lost, cause));
    if (p != null) {
      p.completeExceptionally(new NodeFailureException(lost, cause));
    }
  }
}
