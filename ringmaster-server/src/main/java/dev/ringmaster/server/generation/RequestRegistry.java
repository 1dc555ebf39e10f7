package dev.ringmaster.server.generation;

import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The generations in flight by request id, so that {@code /abort_request} can stop one. A
 * generation registers when it starts and leaves when it is closed.
 */
public final class RequestRegistry {
  private final ConcurrentHashMap<String, Generation> running = new ConcurrentHashMap<>();

  void add(String rid, Generation g) {
    running.put(rid, g);
  }

  void remove(String rid, Generation g) {
    running.remove(rid, g);
  }

  /** Aborts the request with this id; returns whether one was running. */
  public boolean abort(String rid) {
    Generation g = running.get(rid);
    if (g == null) {
      return false;
    }
    g.abort();
    return true;
  }

  /** Aborts every request in flight; returns how many. */
  public int abortAll() {
    List<Generation> all = List.copyOf(running.values());
    all.forEach(Generation::abort);
    return all.size();
  }

  /** Requests in flight. */
  public int size() {
    return running.size();
  }
}
