package dev.ringmaster.model.tokenizer.jinja;

import java.util.HashMap;
import java.util.Map;

/** Variables of one level: the template top level or a for loop body. */
final class Scope {
  private final Scope parent;
  private final Map<String, Object> vars = new HashMap<>();

  Scope(Scope parent) {
    this.parent = parent;
  }

  Object get(String name) {
    for (Scope s = this; s != null; s = s.parent) {
      if (s.vars.containsKey(name)) {
        return s.vars.get(name);
      }
    }
    return new Undefined(name);
  }

  void set(String name, Object value) {
    vars.put(name, value);
  }
}
