package dev.ringmaster.server;

/** The version the server reports ({@code /version}, {@code /get_server_info}). */
public final class ServerVersion {
  /** The release version. */
  public static final String VERSION = "0.1.0";

  private ServerVersion() {}
}
