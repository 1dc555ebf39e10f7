package dev.ringmaster.cuda.driver;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Finds CUDA's shared libraries on a standard install: the driver by its soname (the loader knows
 * where the NVIDIA driver put it), the toolkit libraries (cuBLAS) under CUDA_HOME / CUDA_PATH, the
 * {@code /usr/local/cuda*} trees, then by soname through the loader cache.
 */
@SuppressWarnings("restricted") // loading native libraries is this class's purpose
public final class NativeLibraries {
  private NativeLibraries() {}

  /** The driver API library, loaded for the life of the JVM. */
  public static SymbolLookup loadDriver() {
    try {
      return SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
    } catch (IllegalArgumentException e) {
      throw new CudaException(
          "no NVIDIA driver: libcuda.so.1 cannot be loaded. Install the NVIDIA driver (580 or newer"
              + " for CUDA 13) on a machine with an NVIDIA GPU",
          e);
    }
  }

  /** Folders that may hold the CUDA toolkit's libraries, most specific first. */
  public static List<Path> toolkitLibraryDirs() {
    Set<Path> dirs = new LinkedHashSet<>();
    for (String env : new String[] {"CUDA_HOME", "CUDA_PATH"}) {
      String home = System.getenv(env);
      if (home != null && !home.isBlank()) {
        Path h = Path.of(home);
        dirs.add(h.resolve("targets/x86_64-linux/lib"));
        dirs.add(h.resolve("lib64"));
        dirs.add(h.resolve("lib"));
      }
    }
    dirs.add(Path.of("/usr/local/cuda/targets/x86_64-linux/lib"));
    dirs.add(Path.of("/usr/local/cuda/lib64"));
    List<Path> versioned = new ArrayList<>();
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(Path.of("/usr/local"), "cuda-*")) {
      ds.forEach(versioned::add);
    } catch (IOException | RuntimeException e) {
      // no /usr/local or unreadable: nothing to add
    }
    versioned.sort((a, b) -> b.getFileName().toString().compareTo(a.getFileName().toString()));
    for (Path v : versioned) {
      dirs.add(v.resolve("targets/x86_64-linux/lib"));
      dirs.add(v.resolve("lib64"));
    }
    return List.copyOf(dirs);
  }

  /**
   * Loads a toolkit library such as {@code libcublas} (major versions tried in the order given),
   * first any {@code companions} of the same major version from the same folder (cuBLAS needs
   * cuBLASLt). Returns the lookup and where it came from.
   */
  public static Loaded loadToolkitLibrary(String base, List<String> companions, int... majors) {
    List<String> tried = new ArrayList<>();
    for (Path dir : toolkitLibraryDirs()) {
      for (int major : majors) {
        Path lib = dir.resolve(base + ".so." + major);
        if (Files.isRegularFile(lib)) {
          for (String c : companions) {
            Path cp = dir.resolve(c + ".so." + major);
            if (Files.isRegularFile(cp)) {
              SymbolLookup.libraryLookup(cp, Arena.global());
            }
          }
          return new Loaded(SymbolLookup.libraryLookup(lib, Arena.global()), lib.toString());
        }
        tried.add(lib.toString());
      }
    }
    for (int major : majors) {
      String soname = base + ".so." + major;
      try {
        return new Loaded(SymbolLookup.libraryLookup(soname, Arena.global()), soname);
      } catch (IllegalArgumentException e) {
        tried.add(soname + " (loader cache)");
      }
    }
    throw new CudaException(
        base
            + " not found. Install the CUDA toolkit 13 (or 12) libraries, or set CUDA_HOME; tried: "
            + String.join(", ", tried),
        null);
  }

  /**
   * A loaded library.
   *
   * @param lookup its symbols
   * @param source the path or soname it was loaded from
   */
  public record Loaded(SymbolLookup lookup, String source) {}
}
