package dev.ringmaster.tools.doctor;

/** What {@code doctor} says about one feature on this host. */
public enum Verdict {
  /** The hardware and software it needs are here. */
  OK("ok"),
  /** This hardware cannot run it (no GPU, too old a compute capability, too few GPUs, memory). */
  UNSUPPORTED_HARDWARE("unsupported (hardware)"),
  /** A library, driver or this build of Ringmaster lacks what it needs. */
  UNSUPPORTED_SOFTWARE("unsupported (software version)"),
  /** It may work, but nothing here has checked it (a compute capability never run, two nodes). */
  UNTESTED("untested");

  private final String label;

  Verdict(String label) {
    this.label = label;
  }

  /** The word printed and written to JSON. */
  public String label() {
    return label;
  }
}
