package dev.ringmaster.sim;

import dev.ringmaster.sim.model.ModelShape;
import dev.ringmaster.sim.model.ModelShapes;
import java.nio.file.Files;
import java.nio.file.Path;

/** The repository's configs/ files, found from the module directory. */
public final class Configs {
  private Configs() {}

  /** Loads {@code configs/NAME.json} from the repository root. */
  public static ModelShape load(String name) {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.isDirectory(dir.resolve("configs"))) {
      dir = dir.getParent();
    }
    if (dir == null) {
      throw new IllegalStateException("configs/ not found above " + Path.of("").toAbsolutePath());
    }
    return ModelShapes.load(dir.resolve("configs").resolve(name + ".json"));
  }

  /** Path of {@code configs/NAME.json}. */
  public static Path path(String name) {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.isDirectory(dir.resolve("configs"))) {
      dir = dir.getParent();
    }
    return dir.resolve("configs").resolve(name + ".json");
  }
}
