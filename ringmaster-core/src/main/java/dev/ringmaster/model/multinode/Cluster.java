package dev.ringmaster.model.multinode;

import dev.ringmaster.parallel.tcp.Sockets;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The nodes of a run after they have met: node 0 holds a control connection to every other node,
 * every other node one to node 0, and all know every node's data-plane address and the run's
 * session id.
 *
 * <p>Meeting ({@link #form}): node 0 listens on {@code --dist-init-addr}; every other node connects
 * (retrying while node 0 is not up yet) and says its protocol version, node rank, node count,
 * data-plane port and {@link Fingerprint}. Once all have arrived and agree, node 0 answers each
 * with the session id and every node's data-plane address; if any disagrees, node 0 refuses them
 * all with a message naming the node and each difference. A node that is missing when the timeout
 * passes is named too.
 */
public final class Cluster implements AutoCloseable {
  static final int MAGIC = 0x524d4e44; // "RMND"
  static final int PROTOCOL = 1;

  private final NodeLayout layout;
  private final long session;
  private final List<InetSocketAddress> dataAddresses;
  private final ControlChannel[] channels; // node 0: by node (index 0 unused); others: [leader]

  private Cluster(
      NodeLayout layout,
      long session,
      List<InetSocketAddress> dataAddresses,
      ControlChannel[] channels) {
    this.layout = layout;
    this.session = session;
    this.dataAddresses = dataAddresses;
    this.channels = channels;
  }

  /** The layout this node was started with. */
  public NodeLayout layout() {
    return layout;
  }

  /** The run's id, shared by all nodes (data-plane connections of another run are refused). */
  public long session() {
    return session;
  }

  /** Every node's data-plane address, by node (port 0 where the backend has none). */
  public List<InetSocketAddress> dataAddresses() {
    return dataAddresses;
  }

  /** On node 0: node {@code k}'s control connection. */
  ControlChannel follower(int k) {
    if (!layout.leader() || k < 1 || k >= channels.length) {
      throw new IllegalArgumentException("no control connection to node " + k);
    }
    return channels[k];
  }

  /** On any other node: the control connection to node 0. */
  ControlChannel leader() {
    if (layout.leader()) {
      throw new IllegalStateException("node 0 has no leader");
    }
    return channels[0];
  }

  /** "node k at host:port", as node 0 knows it. */
  String describe(int k) {
    return k == 0 ? "node 0 at " + layout.address() : "node " + k + " at " + channels[k].peer();
  }

  /**
   * On node 0: tells every other node that the run is off ({@code message} says why), so they stop
   * instead of waiting; best effort.
   */
  void abortAll(String message) {
    byte[] p = ControlChannel.payload(out -> ControlChannel.writeString(out, message));
    for (int k = 1; k < channels.length; k++) {
      try {
        channels[k].send(ControlChannel.ABORT, p);
      } catch (IOException ignored) {
        // that node is gone already
      }
    }
  }

  @Override
  public void close() {
    for (ControlChannel c : channels) {
      if (c != null) {
        c.close();
      }
    }
  }

  /**
   * Meets the other nodes: node 0 waits for all of them, the others connect to node 0. {@code
   * backend} binds its data plane first (its port travels in the introduction).
   *
   * @throws NodeFailureException when a node cannot be reached in time, is missing, or disagrees;
   *     the message names the address or the node and the difference
   */
  public static Cluster form(
      NodeLayout layout, Map<String, String> fingerprint, NodeBackend backend) {
    try {
      return layout.leader()
          ? lead(layout, fingerprint, backend)
          : join(layout, fingerprint, backend);
    } catch (IOException | RuntimeException e) {
      backend.cancel(); // releases what bind() opened
      throw e instanceof NodeFailureException n
          ? n
          : new NodeFailureException(
              "--dist-init-addr " + layout.address() + ": " + e.getMessage(), e);
    }
  }

  private record Hello(
      int magic, int protocol, int nodeRank, int nnodes, int dataPort, Map<String, String> print) {}

  private static Cluster lead(
      NodeLayout layout, Map<String, String> fingerprint, NodeBackend backend) throws IOException {
    InetAddress bind = InetAddress.getByName(layout.host());
    ControlChannel[] channels = new ControlChannel[layout.nnodes()];
    int[] ports = new int[layout.nnodes()];
    try (ServerSocket server = new ServerSocket()) {
      server.setReuseAddress(true);
      try {
        server.bind(new InetSocketAddress(bind, layout.port()));
      } catch (IOException e) {
        throw new IOException("node 0 cannot listen there: " + e.getMessage(), e);
      }
      ports[0] = backend.bind(bind);
      long deadline = System.nanoTime() + layout.timeout().toNanos();
      int arrived = 1;
      String problem = null;
      while (arrived < layout.nnodes() && problem == null) {
        server.setSoTimeout(remainingMillis(deadline));
        Socket s;
        try {
          s = server.accept();
        } catch (SocketTimeoutException e) {
          closeAll(channels);
          throw new IOException(
              "only "
                  + arrived
                  + " of "
                  + layout.nnodes()
                  + " nodes arrived within "
                  + layout.timeout().toSeconds()
                  + " s; missing node ranks "
                  + missing(channels),
              e);
        }
        ControlChannel c = new ControlChannel(s);
        Hello h;
        try {
          s.setSoTimeout(remainingMillis(deadline));
          h = readHello(c);
        } catch (IOException e) {
          c.close(); // not a node, or one that died while introducing itself: keep waiting
          continue;
        }
        if (h.magic() != MAGIC) {
          c.close();
          continue;
        }
        problem = check(layout, fingerprint, channels, h);
        if (problem != null) {
          refuse(c, problem);
          break;
        }
        channels[h.nodeRank()] = c;
        ports[h.nodeRank()] = h.dataPort();
        arrived++;
      }
      if (problem != null) {
        for (ControlChannel c : channels) {
          if (c != null) {
            refuse(c, problem);
          }
        }
        throw new IOException(problem);
      }
    } catch (IOException | RuntimeException e) {
      closeAll(channels);
      throw e;
    }
    long session = new SecureRandom().nextLong();
    List<InetSocketAddress> addresses = new ArrayList<>();
    addresses.add(InetSocketAddress.createUnresolved(layout.host(), ports[0]));
    for (int k = 1; k < layout.nnodes(); k++) {
      addresses.add(
          InetSocketAddress.createUnresolved(
              channels[k].socket().getInetAddress().getHostAddress(), ports[k]));
    }
    byte[] welcome =
        ControlChannel.payload(
            out -> {
              out.writeLong(session);
              out.writeInt(addresses.size());
              for (InetSocketAddress a : addresses) {
                ControlChannel.writeString(out, a.getHostString());
                out.writeInt(a.getPort());
              }
            });
    try {
      for (int k = 1; k < layout.nnodes(); k++) {
        channels[k].send(ControlChannel.WELCOME, welcome);
        channels[k].socket().setSoTimeout(0); // steps may be far apart: no read timeout
      }
    } catch (IOException e) {
      closeAll(channels);
      throw new IOException("a node went away while the nodes met: " + ControlChannel.reason(e), e);
    }
    return new Cluster(layout, session, resolve(addresses), channels);
  }

  private static String check(
      NodeLayout layout, Map<String, String> fingerprint, ControlChannel[] channels, Hello h) {
    int k = h.nodeRank();
    if (h.protocol() != PROTOCOL) {
      return "node "
          + k
          + " speaks control protocol "
          + h.protocol()
          + ", node 0 speaks "
          + PROTOCOL
          + " (different Ringmaster versions)";
    }
    if (h.nnodes() != layout.nnodes()) {
      return "node " + k + " says --nnodes " + h.nnodes() + ", node 0 says " + layout.nnodes();
    }
    if (k <= 0 || k >= layout.nnodes() || channels[k] != null) {
      return "node rank " + k + " is out of range 1.." + (layout.nnodes() - 1) + " or taken twice";
    }
    List<String> diff = Fingerprint.differences(fingerprint, h.print(), k);
    if (!diff.isEmpty()) {
      return "node "
          + k
          + " runs a different model or settings than node 0: "
          + String.join("; ", diff);
    }
    return null;
  }

  private static void refuse(ControlChannel c, String problem) {
    try {
      c.send(
          ControlChannel.REFUSED,
          ControlChannel.payload(out -> ControlChannel.writeString(out, problem)));
    } catch (IOException ignored) {
      // it is being refused anyway
    } finally {
      c.close();
    }
  }

  private static Hello readHello(ControlChannel c) throws IOException {
    ControlChannel.Message m = c.read();
    if (m.type() != ControlChannel.HELLO) {
      return new Hello(0, 0, -1, 0, 0, Map.of());
    }
    DataInputStream in = m.data();
    int magic = in.readInt();
    if (magic != MAGIC) {
      return new Hello(magic, 0, -1, 0, 0, Map.of());
    }
    int protocol = in.readInt();
    int nodeRank = in.readInt();
    int nnodes = in.readInt();
    int dataPort = in.readInt();
    int n = in.readInt();
    Map<String, String> print = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      print.put(ControlChannel.readString(in), ControlChannel.readString(in));
    }
    return new Hello(magic, protocol, nodeRank, nnodes, dataPort, print);
  }

  private static Cluster join(
      NodeLayout layout, Map<String, String> fingerprint, NodeBackend backend) throws IOException {
    long deadline = System.nanoTime() + layout.timeout().toNanos();
    InetSocketAddress node0 = new InetSocketAddress(layout.host(), layout.port());
    Socket s = Sockets.connect(node0, deadline, "node 0");
    ControlChannel c = new ControlChannel(s);
    try {
      int dataPort = backend.bind(s.getLocalAddress());
      c.send(
          ControlChannel.HELLO,
          ControlChannel.payload(
              out -> {
                out.writeInt(MAGIC);
                out.writeInt(PROTOCOL);
                out.writeInt(layout.nodeRank());
                out.writeInt(layout.nnodes());
                out.writeInt(dataPort);
                out.writeInt(fingerprint.size());
                for (Map.Entry<String, String> e : fingerprint.entrySet()) {
                  ControlChannel.writeString(out, e.getKey());
                  ControlChannel.writeString(out, e.getValue());
                }
              }));
      s.setSoTimeout(remainingMillis(deadline));
      ControlChannel.Message m;
      try {
        m = c.read();
      } catch (SocketTimeoutException e) {
        throw new IOException(
            "node 0 accepted this node but did not answer within "
                + layout.timeout().toSeconds()
                + " s (are all "
                + layout.nnodes()
                + " nodes started?)",
            e);
      }
      DataInputStream in = m.data();
      if (m.type() == ControlChannel.REFUSED) {
        throw new IOException("node 0 refused this node: " + ControlChannel.readString(in));
      }
      if (m.type() != ControlChannel.WELCOME) {
        throw new IOException("unexpected answer " + m.type() + " from node 0");
      }
      long session = in.readLong();
      int n = in.readInt();
      List<InetSocketAddress> addresses = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        addresses.add(
            InetSocketAddress.createUnresolved(ControlChannel.readString(in), in.readInt()));
      }
      s.setSoTimeout(0);
      return new Cluster(layout, session, resolve(addresses), new ControlChannel[] {c});
    } catch (IOException | RuntimeException e) {
      c.close();
      throw e;
    }
  }

  private static List<InetSocketAddress> resolve(List<InetSocketAddress> unresolved) {
    List<InetSocketAddress> out = new ArrayList<>();
    for (InetSocketAddress a : unresolved) {
      out.add(new InetSocketAddress(a.getHostString(), a.getPort()));
    }
    return List.copyOf(out);
  }

  private static String missing(ControlChannel[] channels) {
    List<Integer> m = new ArrayList<>();
    for (int k = 1; k < channels.length; k++) {
      if (channels[k] == null) {
        m.add(k);
      }
    }
    return m.toString();
  }

  private static void closeAll(ControlChannel[] channels) {
    Arrays.stream(channels).filter(c -> c != null).forEach(ControlChannel::close);
  }

  private static int remainingMillis(long deadlineNanos) {
    return Math.clamp((deadlineNanos - System.nanoTime()) / 1_000_000, 1, Integer.MAX_VALUE);
  }
}
