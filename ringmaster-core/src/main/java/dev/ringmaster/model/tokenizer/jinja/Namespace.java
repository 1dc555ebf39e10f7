package dev.ringmaster.model.tokenizer.jinja;

import java.util.LinkedHashMap;
import java.util.Map;

/** The mutable object {@code namespace(...)} returns, the one way to carry state out of loops. */
final class Namespace {
  final Map<String, Object> attributes = new LinkedHashMap<>();

  @Override
  public String toString() {
    return "<Namespace " + attributes + ">";
  }
}
