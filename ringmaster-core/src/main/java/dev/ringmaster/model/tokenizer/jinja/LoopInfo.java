package dev.ringmaster.model.tokenizer.jinja;

import java.util.List;

/** The {@code loop} variable inside a for loop. */
final class LoopInfo {
  private final List<Object> items;
  int index0;

  LoopInfo(List<Object> items) {
    this.items = items;
  }

  Object attribute(String name) {
    int length = items.size();
    return switch (name) {
      case "index0" -> (long) index0;
      case "index" -> (long) index0 + 1;
      case "revindex0" -> (long) (length - index0 - 1);
      case "revindex" -> (long) (length - index0);
      case "first" -> index0 == 0;
      case "last" -> index0 == length - 1;
      case "length" -> (long) length;
      case "previtem" -> index0 > 0 ? items.get(index0 - 1) : new Undefined("loop.previtem");
      case "nextitem" ->
          index0 + 1 < length ? items.get(index0 + 1) : new Undefined("loop.nextitem");
      case "cycle" ->
          (JinjaFunction)
              (args, kwargs, line) -> args.isEmpty() ? null : args.get(index0 % args.size());
      default -> new Undefined("loop." + name);
    };
  }
}
