package dev.ringmaster.cuda.nccl;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Hands node 0's {@link NcclUniqueId} to the other nodes over TCP before NCCL starts. Node 0
 * listens; every other node connects (retrying while node 0 is not up yet) and says which node it
 * is, how many nodes it expects and how many GPUs it drives; once all have arrived and agree, node
 * 0 answers each with the world size and the id. Any disagreement or timeout fails every node with
 * a message that says what differed.
 */
public final class UniqueIdExchange {
  private static final int MAGIC = 0x524d4e43; // "RMNC"
  private static final long RETRY_MILLIS = 200;

  private UniqueIdExchange() {}

  /**
   * What a node learns.
   *
   * @param worldSize total ranks (nodes x GPUs per node)
   * @param id the communicator's id
   */
  public record Joined(int worldSize, NcclUniqueId id) {}

  /**
   * Node 0's side: listens on {@code bind}; {@link #distribute} then waits for the other nodes.
   * Open it before creating the id's communicators so the port is taken early.
   */
  public static final class Server implements AutoCloseable {
    private final ServerSocket socket;

    private Server(ServerSocket socket) {
      this.socket = socket;
    }

    /** The bound port (useful when port 0 asked for any free one). */
    public int port() {
      return socket.getLocalPort();
    }

    /**
     * Waits until the other {@code nnodes - 1} nodes have connected, checks they agree, and sends
     * each the world size and {@code id}. Returns the world size.
     */
    public int distribute(int nnodes, int gpusPerNode, NcclUniqueId id, Duration timeout)
        throws IOException {
      long deadline = System.nanoTime() + timeout.toNanos();
      List<Socket> peers = new ArrayList<>();
      boolean[] seen = new boolean[nnodes];
      seen[0] = true;
      try {
        String problem = null;
        while (peers.size() < nnodes - 1) {
          int left = (int) Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
          socket.setSoTimeout(left);
          Socket s;
          try {
            s = socket.accept();
          } catch (SocketTimeoutException e) {
            throw new IOException(
                "--dist-init-addr: only "
                    + (peers.size() + 1)
                    + " of "
                    + nnodes
                    + " nodes arrived within "
                    + timeout.toSeconds()
                    + " s; missing node ranks "
                    + missing(seen),
                e);
          }
          peers.add(s);
          s.setSoTimeout(left);
          DataInputStream in = new DataInputStream(s.getInputStream());
          int magic = in.readInt();
          int nodeRank = in.readInt();
          int theirNodes = in.readInt();
          int theirGpus = in.readInt();
          if (magic != MAGIC) {
            problem = "a connection that is not a Ringmaster node reached the init port";
          } else if (theirNodes != nnodes) {
            problem =
                "node " + nodeRank + " says --nnodes " + theirNodes + ", node 0 says " + nnodes;
          } else if (nodeRank <= 0 || nodeRank >= nnodes || seen[nodeRank]) {
            problem = "node rank " + nodeRank + " is out of range or taken twice";
          } else if (theirGpus != gpusPerNode) {
            problem =
                "node " + nodeRank + " drives " + theirGpus + " GPUs, node 0 drives " + gpusPerNode;
          } else {
            seen[nodeRank] = true;
          }
          if (problem != null) {
            break;
          }
        }
        int world = nnodes * gpusPerNode;
        for (Socket s : peers) {
          DataOutputStream out = new DataOutputStream(s.getOutputStream());
          out.writeInt(MAGIC);
          if (problem == null) {
            out.writeInt(0);
            out.writeInt(world);
            out.write(id.bytes());
          } else {
            byte[] msg = problem.getBytes(StandardCharsets.UTF_8);
            out.writeInt(1);
            out.writeInt(msg.length);
            out.write(msg);
          }
          out.flush();
        }
        if (problem != null) {
          throw new IOException("--dist-init-addr: " + problem);
        }
        return world;
      } finally {
        for (Socket s : peers) {
          s.close();
        }
      }
    }

    @Override
    public void close() throws IOException {
      socket.close();
    }
  }

  private static String missing(boolean[] seen) {
    List<Integer> m = new ArrayList<>();
    for (int i = 0; i < seen.length; i++) {
      if (!seen[i]) {
        m.add(i);
      }
    }
    return m.toString();
  }

  /** Opens node 0's listening socket on {@code bind}. */
  public static Server listen(InetSocketAddress bind) throws IOException {
    ServerSocket s = new ServerSocket();
    s.setReuseAddress(true);
    try {
      s.bind(bind);
    } catch (IOException e) {
      s.close();
      throw new IOException(
          "--dist-init-addr: cannot listen on " + bind + ": " + e.getMessage(), e);
    }
    return new Server(s);
  }

  /**
   * A node other than 0: connects to node 0 (retrying until {@code timeout} while nobody listens
   * yet), introduces itself and waits for the id.
   */
  public static Joined join(DistInit init, int gpusPerNode, Duration timeout) throws IOException {
    long deadline = System.nanoTime() + timeout.toNanos();
    InetSocketAddress addr = new InetSocketAddress(init.host(), init.port());
    IOException last = null;
    while (System.nanoTime() < deadline) {
      try (Socket s = new Socket()) {
        int left = (int) Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
        s.connect(addr, left);
        s.setSoTimeout(left);
        DataOutputStream out = new DataOutputStream(s.getOutputStream());
        out.writeInt(MAGIC);
        out.writeInt(init.nodeRank());
        out.writeInt(init.nnodes());
        out.writeInt(gpusPerNode);
        out.flush();
        DataInputStream in = new DataInputStream(s.getInputStream());
        if (in.readInt() != MAGIC) {
          throw new IOException("--dist-init-addr " + addr + " is not a Ringmaster node 0");
        }
        if (in.readInt() != 0) {
          byte[] msg = new byte[in.readInt()];
          in.readFully(msg);
          throw new IOException(
              "--dist-init-addr: node 0 refused: " + new String(msg, StandardCharsets.UTF_8));
        }
        int world = in.readInt();
        byte[] id = new byte[NcclUniqueId.BYTES];
        in.readFully(id);
        return new Joined(world, new NcclUniqueId(id));
      } catch (ConnectException e) {
        last = e; // node 0 not listening yet
      } catch (SocketTimeoutException e) {
        throw new IOException(
            "--dist-init-addr: node 0 at "
                + addr
                + " did not answer within "
                + timeout.toSeconds()
                + " s (are all "
                + init.nnodes()
                + " nodes started?)",
            e);
      }
      sleep();
    }
    throw new IOException(
        "--dist-init-addr: could not reach node 0 at "
            + addr
            + " within "
            + timeout.toSeconds()
            + " s"
            + (last != null ? " (" + last.getMessage() + ")" : ""),
        last);
  }

  private static void sleep() throws IOException {
    try {
      Thread.sleep(RETRY_MILLIS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("interrupted while waiting for node 0", e);
    }
  }
}
