package dev.ringmaster.util;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Reads and writes 2-D float32 arrays as NumPy {@code .npy} files (format version 1.0 written; 1.0,
 * 2.0 and 3.0 read), so that {@code numpy.load} opens what Ringmaster writes and the reverse. Only
 * {@code '<f4'} in C order: the logits dumps of {@code generate --dump-logits} and what {@code
 * compare-logits} reads.
 *
 * <p>Layout per the NPY spec: the magic {@code \x93NUMPY}, major and minor version bytes, the
 * header length (little-endian uint16 in 1.0, uint32 in 2.0/3.0), then an ASCII Python dict literal
 * padded with spaces and ending in {@code \n} so that the whole preamble is a multiple of 64 bytes
 * (the data stays aligned), then the data.
 */
public final class Npy {
  private static final byte[] MAGIC = {(byte) 0x93, 'N', 'U', 'M', 'P', 'Y'};
  private static final int ALIGN = 64;
  private static final Pattern DESCR = Pattern.compile("'descr'\\s*:\\s*'([^']*)'");
  private static final Pattern FORTRAN = Pattern.compile("'fortran_order'\\s*:\\s*(True|False)");
  private static final Pattern SHAPE = Pattern.compile("'shape'\\s*:\\s*\\(([^)]*)\\)");

  private Npy() {}

  /**
   * A {@code rows x cols} float32 matrix in row-major (C) order.
   *
   * @param rows number of rows
   * @param cols number of columns
   * @param data {@code rows * cols} values, row after row
   */
  public record Matrix(int rows, int cols, float[] data) {
    /** Checks that the data has exactly {@code rows * cols} values. */
    public Matrix {
      if (rows < 0 || cols < 0 || (long) rows * cols != data.length) {
        throw new IllegalArgumentException(
            "shape (" + rows + ", " + cols + ") does not hold " + data.length + " values");
      }
    }

    /** Stacks rows of equal length {@code cols}. */
    public static Matrix ofRows(int cols, List<float[]> rows) {
      float[] data = new float[Math.multiplyExact(rows.size(), cols)];
      for (int r = 0; r < rows.size(); r++) {
        float[] row = rows.get(r);
        if (row.length != cols) {
          throw new IllegalArgumentException(
              "row " + r + " has " + row.length + " values, expected " + cols);
        }
        System.arraycopy(row, 0, data, r * cols, cols);
      }
      return new Matrix(rows.size(), cols, data);
    }

    /** The value at row {@code r}, column {@code c}. */
    public float get(int r, int c) {
      return data[r * cols + c];
    }

    /** The shape as NumPy prints it, e.g. {@code (3, 320)}. */
    public String shape() {
      return "(" + rows + ", " + cols + ")";
    }
  }

  /**
   * Writes {@code m} as a version 1.0 {@code .npy} file of dtype {@code '<f4'}, shape (rows, cols).
   */
  public static void write(Path file, Matrix m) throws IOException {
    try (OutputStream out = Files.newOutputStream(file)) {
      out.write(preamble(m.rows(), m.cols()));
      ByteBuffer buf = ByteBuffer.allocate(Math.max(m.cols(), 1) * Float.BYTES);
      buf.order(ByteOrder.LITTLE_ENDIAN);
      for (int r = 0; r < m.rows(); r++) {
        buf.clear();
        buf.asFloatBuffer().put(m.data(), r * m.cols(), m.cols());
        out.write(buf.array(), 0, m.cols() * Float.BYTES);
      }
    }
  }

  /** The bytes before the data of a version 1.0 file of {@code '<f4'}, shape (rows, cols). */
  static byte[] preamble(int rows, int cols) {
    String dict =
        "{'descr': '<f4', 'fortran_order': False, 'shape': (" + rows + ", " + cols + "), }";
    int fixed = MAGIC.length + 2 + 2; // magic, version, uint16 header length
    int headerLen = dict.length() + 1; // + the closing \n
    headerLen += (ALIGN - (fixed + headerLen) % ALIGN) % ALIGN;
    ByteBuffer b = ByteBuffer.allocate(fixed + headerLen).order(ByteOrder.LITTLE_ENDIAN);
    b.put(MAGIC).put((byte) 1).put((byte) 0).putShort((short) headerLen);
    b.put(dict.getBytes(StandardCharsets.US_ASCII));
    while (b.remaining() > 1) {
      b.put((byte) ' ');
    }
    b.put((byte) '\n');
    return b.array();
  }

  /**
   * Reads a 2-D {@code '<f4'} C-order {@code .npy} file.
   *
   * @throws IOException if the file cannot be read or is not such an array (the message says why)
   */
  public static Matrix read(Path file) throws IOException {
    try (InputStream in = Files.newInputStream(file)) {
      byte[] start = in.readNBytes(MAGIC.length + 2);
      if (start.length < MAGIC.length + 2
          || !java.util.Arrays.equals(start, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
        throw new IOException(file + ": not a NumPy .npy file (no \\x93NUMPY magic)");
      }
      int major = start[MAGIC.length];
      if (major < 1 || major > 3) {
        throw new IOException(file + ": unsupported .npy format version " + major);
      }
      int lenBytes = major == 1 ? 2 : 4;
      byte[] lenRaw = in.readNBytes(lenBytes);
      if (lenRaw.length < lenBytes) {
        throw new IOException(file + ": truncated .npy header");
      }
      ByteBuffer lb = ByteBuffer.wrap(lenRaw).order(ByteOrder.LITTLE_ENDIAN);
      long headerLen = major == 1 ? Short.toUnsignedInt(lb.getShort()) : lb.getInt() & 0xffffffffL;
      if (headerLen > 1 << 20) {
        throw new IOException(file + ": implausible .npy header length " + headerLen);
      }
      byte[] headerRaw = in.readNBytes((int) headerLen);
      if (headerRaw.length < headerLen) {
        throw new IOException(file + ": truncated .npy header");
      }
      String header =
          new String(headerRaw, major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1);
      String descr = field(DESCR, header, "descr", file);
      if (!descr.equals("<f4")) {
        throw new IOException(
            file + ": dtype '" + descr + "', expected '<f4' (little-endian float32)");
      }
      if (field(FORTRAN, header, "fortran_order", file).equals("True")) {
        throw new IOException(file + ": Fortran-order array, expected C order");
      }
      long[] shape = shape2d(field(SHAPE, header, "shape", file), file);
      long count = shape[0] * shape[1];
      if (shape[0] > Integer.MAX_VALUE
          || shape[1] > Integer.MAX_VALUE
          || count * Float.BYTES > Integer.MAX_VALUE - 8) {
        throw new IOException(
            file + ": array of shape " + shape[0] + "x" + shape[1] + " is too large");
      }
      float[] data = new float[(int) count];
      // In chunks, so a large file is not held twice (bytes and floats).
      ByteBuffer buf = ByteBuffer.allocate(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
      for (int done = 0; done < count; ) {
        int n = (int) Math.min(count - done, buf.capacity() / Float.BYTES);
        int got = in.readNBytes(buf.array(), 0, n * Float.BYTES);
        if (got < n * Float.BYTES) {
          throw new IOException(
              file + ": truncated data, " + (done * 4L + got) + " of " + count * 4 + " bytes");
        }
        buf.clear();
        buf.asFloatBuffer().get(data, done, n);
        done += n;
      }
      if (in.read() != -1) {
        throw new IOException(
            file + ": more data than its shape (" + shape[0] + ", " + shape[1] + ") holds");
      }
      return new Matrix((int) shape[0], (int) shape[1], data);
    }
  }

  /** Parses a shape tuple's inside ("3, 320") that must have exactly two dimensions. */
  private static long[] shape2d(String tuple, Path file) throws IOException {
    String[] dims = tuple.split(",");
    long[] shape = new long[2];
    int n = 0;
    for (String d : dims) {
      if (d.isBlank()) {
        continue; // the trailing comma of a 1-tuple
      }
      if (n == 2) {
        n++;
        break;
      }
      try {
        shape[n] = Long.parseLong(d.strip());
      } catch (NumberFormatException e) {
        shape[n] = -1;
      }
      if (shape[n++] < 0) {
        throw new IOException(file + ": bad shape (" + tuple + ")");
      }
    }
    if (n != 2) {
      throw new IOException(file + ": shape (" + tuple + ") is not 2-D (steps, vocab)");
    }
    return shape;
  }

  private static String field(Pattern p, String header, String name, Path file) throws IOException {
    Matcher m = p.matcher(header);
    if (!m.find()) {
      throw new IOException(file + ": .npy header has no '" + name + "': " + header.strip());
    }
    return m.group(1);
  }
}
