package dev.ringmaster.tools.tune;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A child {@code serve} (or {@code bench one-batch}) process: its output (stdout and stderr
 * together) copied to a log file with the last lines kept for the evidence, and the URL it prints
 * once it listens. {@link #close} stops it (SIGTERM, then a kill after a grace period) with any
 * processes it started.
 */
final class ServerProcess implements AutoCloseable {
  static final String READY = "ringmaster: serving at ";
  private static final int KEPT_LINES = 200;
  private static final Duration GRACE = Duration.ofSeconds(10);

  private final Process process;
  private final Deque<String> tail = new ArrayDeque<>();
  private final CompletableFuture<String> url = new CompletableFuture<>();
  private final Thread reader;

  private ServerProcess(Process process, Path log) {
    this.process = process;
    this.reader = Thread.ofPlatform().daemon().name("tune-server-log").start(() -> copy(log));
  }

  /** Starts {@code command}, its output going to {@code log}. */
  static ServerProcess start(List<String> command, Path log) throws IOException {
    Files.createDirectories(log.toAbsolutePath().getParent());
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    p.getOutputStream().close();
    return new ServerProcess(p, log);
  }

  private void copy(Path log) {
    try (BufferedReader in =
            new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        PrintWriter out = new PrintWriter(Files.newBufferedWriter(log, StandardCharsets.UTF_8))) {
      for (String line; (line = in.readLine()) != null; ) {
        out.println(line);
        out.flush();
        synchronized (tail) {
          tail.addLast(line);
          if (tail.size() > KEPT_LINES) {
            tail.removeFirst();
          }
        }
        if (line.startsWith(READY)) {
          url.complete(line.substring(READY.length()).strip());
        }
      }
    } catch (IOException e) {
      // the stream closes when the process dies; what was read is kept
    } finally {
      url.complete(null);
    }
  }

  /**
   * The URL once the server listens, null when it exited first.
   *
   * @throws TimeoutException when it neither listens nor exits within {@code timeout}
   */
  String awaitUrl(Duration timeout) throws TimeoutException, InterruptedException {
    try {
      return url.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    }
  }

  /** Waits up to {@code timeout} for the process to exit; whether it did. */
  boolean awaitExit(Duration timeout) throws InterruptedException {
    return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** Whether the process is still running. */
  boolean alive() {
    return process.isAlive();
  }

  /** The exit status, after waiting for the log to be read to the end. */
  int exitCode() throws InterruptedException {
    int code = process.waitFor();
    reader.join(GRACE.toMillis());
    return code;
  }

  /** The last lines of output. */
  List<String> tail() {
    synchronized (tail) {
      return new ArrayList<>(tail);
    }
  }

  @Override
  public void close() {
    List<ProcessHandle> children = process.descendants().toList();
    process.destroy();
    try {
      if (!process.waitFor(GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
        process.destroyForcibly();
        process.waitFor(GRACE.toMillis(), TimeUnit.MILLISECONDS);
      }
      reader.join(GRACE.toMillis());
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
    children.forEach(ProcessHandle::destroyForcibly);
  }
}
