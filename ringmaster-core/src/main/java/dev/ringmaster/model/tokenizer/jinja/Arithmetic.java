package dev.ringmaster.model.tokenizer.jinja;

import java.util.ArrayList;
import java.util.List;

/** Python's arithmetic operators on template values. */
final class Arithmetic {
  private Arithmetic() {}

  static Object apply(String op, Object a, Object b, int line) {
    if (op.equals("+") && a instanceof String sa && b instanceof String sb) {
      return sa + sb;
    }
    if (op.equals("+") && a instanceof List<?> la && b instanceof List<?> lb) {
      List<Object> out = new ArrayList<>(la);
      out.addAll(lb);
      return out;
    }
    if (op.equals("*") && a instanceof String s && isInt(b)) {
      return s.repeat((int) Math.max(0, Values.asLong(b, line)));
    }
    if (!Values.isNumber(a) || !Values.isNumber(b)) {
      throw new TemplateException(
          "unsupported operand types for "
              + op
              + ": "
              + Values.typeName(a)
              + " and "
              + Values.typeName(b),
          line);
    }
    if (isInt(a) && isInt(b) && !op.equals("/")) {
      long x = Values.asLong(a, line);
      long y = Values.asLong(b, line);
      return switch (op) {
        case "+" -> x + y;
        case "-" -> x - y;
        case "*" -> x * y;
        case "//" -> Math.floorDiv(x, nonZero(y, line));
        case "%" -> Math.floorMod(x, nonZero(y, line));
        case "**" -> y >= 0 ? (Object) (long) Math.pow(x, y) : Math.pow(x, y);
        default -> throw new TemplateException("unknown operator " + op, line);
      };
    }
    double x = Values.asDouble(a);
    double y = Values.asDouble(b);
    return switch (op) {
      case "+" -> x + y;
      case "-" -> x - y;
      case "*" -> x * y;
      case "/" -> x / nonZero(y, line);
      case "//" -> Math.floor(x / nonZero(y, line));
      case "%" -> x - Math.floor(x / nonZero(y, line)) * y;
      case "**" -> Math.pow(x, y);
      default -> throw new TemplateException("unknown operator " + op, line);
    };
  }

  private static boolean isInt(Object v) {
    return v instanceof Long || v instanceof Boolean;
  }

  private static long nonZero(long y, int line) {
    if (y == 0) {
      throw new TemplateException("division by zero", line);
    }
    return y;
  }

  private static double nonZero(double y, int line) {
    if (y == 0) {
      throw new TemplateException("division by zero", line);
    }
    return y;
  }
}
