package dev.ringmaster.model.tokenizer.jinja;

import java.util.List;
import java.util.Map;

/** A callable value: a global function or a method bound to its object. */
@FunctionalInterface
interface JinjaFunction {
  Object call(List<Object> args, Map<String, Object> kwargs, int line);
}
