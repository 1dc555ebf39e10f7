package dev.ringmaster.parallel.tcp;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * Opens one socket between every pair of ranks: the higher rank connects to the lower rank's node
 * (same-node pairs too, through the node's own listener), says who it is, and the lower side
 * answers once it has checked the session, the ranks and that the pair is new. A node is connected
 * when all its ranks' outgoing and incoming sockets are up.
 */
final class TcpMesh {
  private static final int MAGIC = 0x524d5450; // "RMTP"

  private TcpMesh() {}

  /**
   * Returns {@code sockets[local][peer]} (null for the rank itself) for this node's ranks.
   *
   * @throws IOException naming the missing pairs when the mesh is not complete by the deadline
   */
  static Socket[][] open(
      ServerSocket listener,
      TcpWorldConfig cfg,
      int node,
      List<InetSocketAddress> nodes,
      long session,
      long deadlineNanos,
      BooleanSupplier cancelled)
      throws IOException {
    int world = cfg.worldSize();
    int local = cfg.localSize();
    int first = node * local;
    Socket[][] sockets = new Socket[local][world];
    int incoming = 0;
    for (int i = first; i < first + local; i++) {
      incoming += world - 1 - i;
    }
    Acceptor acceptor =
        new Acceptor(listener, cfg, first, session, incoming, sockets, deadlineNanos);
    Thread t = Thread.ofPlatform().daemon().name("ringmaster-mesh-accept").start(acceptor);
    try {
      for (int j = first; j < first + local; j++) {
        for (int i = 0; i < j; i++) {
          InetSocketAddress to = nodes.get(cfg.nodeOf(i));
          Socket s =
              Sockets.connect(
                  to, deadlineNanos, "rank " + i + " (node " + cfg.nodeOf(i) + ")", cancelled);
          try {
            s.setSoTimeout(remainingMillis(deadlineNanos));
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            out.writeInt(MAGIC);
            out.writeLong(session);
            out.writeInt(j);
            out.writeInt(i);
            out.flush();
            DataInputStream in = new DataInputStream(s.getInputStream());
            if (in.readInt() != 0) {
              throw new IOException(
                  "rank "
                      + i
                      + " at "
                      + Sockets.format(to)
                      + " refused rank "
                      + j
                      + ": "
                      + in.readUTF());
            }
          } catch (IOException e) {
            s.close();
            throw e;
          }
          synchronized (sockets) {
            sockets[j - first][i] = s;
          }
        }
      }
      t.join(Math.max(1, remainingMillis(deadlineNanos)));
      if (t.isAlive()) {
        listener.close(); // ends the acceptor
        t.join();
      }
      if (cancelled.getAsBoolean()) {
        throw new IOException("cancelled while connecting the ranks");
      }
      if (acceptor.failure != null) {
        throw acceptor.failure;
      }
      return sockets;
    } catch (IOException | RuntimeException e) {
      listener.close();
      closeAll(sockets);
      throw e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      listener.close();
      closeAll(sockets);
      throw new IOException("interrupted while connecting the ranks", e);
    }
  }

  private static int remainingMillis(long deadlineNanos) {
    return Math.clamp((deadlineNanos - System.nanoTime()) / 1_000_000, 1, Integer.MAX_VALUE);
  }

  static void closeAll(Socket[][] sockets) {
    synchronized (sockets) {
      for (Socket[] row : sockets) {
        for (Socket s : row) {
          if (s != null) {
            try {
              s.close();
            } catch (IOException ignored) {
              // best effort
            }
          }
        }
      }
    }
  }

  /** Accepts the connections of the higher ranks to this node's ranks. */
  private static final class Acceptor implements Runnable {
    private final ServerSocket listener;
    private final TcpWorldConfig cfg;
    private final int first;
    private final long session;
    private final int expected;
    private final Socket[][] sockets;
    private final long deadlineNanos;
    volatile IOException failure;

    Acceptor(
        ServerSocket listener,
        TcpWorldConfig cfg,
        int first,
        long session,
        int expected,
        Socket[][] sockets,
        long deadlineNanos) {
      this.listener = listener;
      this.cfg = cfg;
      this.first = first;
      this.session = session;
      this.expected = expected;
      this.sockets = sockets;
      this.deadlineNanos = deadlineNanos;
    }

    @Override
    public void run() {
      int accepted = 0;
      try {
        while (accepted < expected) {
          listener.setSoTimeout(remainingMillis(deadlineNanos));
          Socket s = listener.accept();
          if (admit(s)) {
            accepted++;
          }
        }
      } catch (SocketTimeoutException e) {
        failure = new SocketTimeoutException("not every rank connected in time: " + missing());
      } catch (IOException e) {
        failure =
            listener.isClosed()
                ? new SocketTimeoutException("not every rank connected in time: " + missing())
                : e;
      }
    }

    /** Checks a newcomer's introduction; answers and keeps it, or refuses and closes it. */
    private boolean admit(Socket s) throws IOException {
      String problem;
      int from;
      int to;
      try {
        s.setSoTimeout(remainingMillis(deadlineNanos));
        DataInputStream in = new DataInputStream(s.getInputStream());
        int magic = in.readInt();
        long theirSession = in.readLong();
        from = in.readInt();
        to = in.readInt();
        if (magic != MAGIC) {
          problem = "not a Ringmaster rank";
        } else if (theirSession != session) {
          problem = "it belongs to another run (session differs)";
        } else if (to < first || to >= first + cfg.localSize() || from <= to) {
          problem = "rank " + from + " -> " + to + " is not a pair this node accepts";
        } else if (from >= cfg.worldSize()) {
          problem = "rank " + from + " is outside the world of " + cfg.worldSize();
        } else {
          synchronized (sockets) {
            problem =
                sockets[to - first][from] != null
                    ? "rank " + from + " connected to rank " + to + " twice"
                    : null;
          }
        }
      } catch (IOException e) {
        s.close(); // a stray or dying connection; keep waiting for the real ones
        return false;
      }
      DataOutputStream out = new DataOutputStream(s.getOutputStream());
      if (problem != null) {
        try {
          out.writeInt(1);
          out.writeUTF(problem);
          out.flush();
        } finally {
          s.close();
        }
        return false;
      }
      out.writeInt(0);
      out.flush();
      synchronized (sockets) {
        sockets[to - first][from] = s;
      }
      return true;
    }

    private String missing() {
      List<String> m = new ArrayList<>();
      synchronized (sockets) {
        for (int to = first; to < first + cfg.localSize(); to++) {
          for (int from = to + 1; from < cfg.worldSize(); from++) {
            if (sockets[to - first][from] == null) {
              m.add("rank " + from + " (node " + cfg.nodeOf(from) + ") -> rank " + to);
            }
          }
        }
      }
      return String.join(", ", m);
    }
  }

  /** The time budget as a deadline. */
  static long deadline(Duration timeout) {
    return System.nanoTime() + timeout.toNanos();
  }
}
