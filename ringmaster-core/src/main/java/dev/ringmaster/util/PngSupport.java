package dev.ringmaster.util;

/**
 * Whether this Java runtime can draw the project's PNG charts. They are drawn with AWT, which lives
 * in the {@code java.desktop} module; small runtimes made with {@code jlink} for servers often
 * leave it out, and a chart is then skipped (or its flag refused up front) instead of failing after
 * the work it charts is done.
 */
public final class PngSupport {
  private PngSupport() {}

  /** True when the {@code java.desktop} module (AWT and ImageIO) is in this runtime. */
  public static boolean available() {
    return ModuleLayer.boot().findModule("java.desktop").isPresent();
  }

  /** Why no PNG can be drawn here, naming the runtime and what to do; for messages. */
  public static String missingReason() {
    return "this Java runtime ("
        + System.getProperty("java.home")
        + ") has no java.desktop module, which draws PNG charts: run with a full JDK or JRE";
  }
}
