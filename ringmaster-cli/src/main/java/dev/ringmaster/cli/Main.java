package dev.ringmaster.cli;

/** Entry point. */
public final class Main {
  private Main() {}

  /** Runs the CLI. */
  public static void main(String[] args) {
    System.out.println("ringmaster");
  }
}
