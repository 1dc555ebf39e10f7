package dev.ringmaster.engine.constraint;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;

/**
 * Compiles regexes, choice lists, JSON schemas and EBNF grammars for one vocabulary, with a small
 * LRU cache keyed by the constraint's text, so repeated requests with the same schema compile it
 * once, concurrent ones included (the later ones wait for the first's compilation). Thread-safe:
 * request threads compile, so a bad constraint is refused before the request reaches the engine.
 */
public final class ConstraintCompiler {
  private static final int CACHE_ENTRIES = 64;
  private final TokenVocabulary vocab;
  // A constraint being compiled is in the cache as its future, so concurrent first requests for
  // the same text wait for one compilation instead of each running their own.
  private final Map<String, CompletableFuture<OutputConstraint>> cache =
      new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(
            Map.Entry<String, CompletableFuture<OutputConstraint>> e) {
          return size() > CACHE_ENTRIES;
        }
      };

  /** A compiler for a vocabulary. */
  public ConstraintCompiler(TokenVocabulary vocab) {
    this.vocab = vocab;
  }

  /** The vocabulary. */
  public TokenVocabulary vocabulary() {
    return vocab;
  }

  /** Outputs matching a regular expression as a whole (see {@link RegexParser} for the syntax). */
  public TokenConstraint regex(String pattern) {
    return automaton("regex:" + pattern, () -> ByteDfa.ofRegex(pattern));
  }

  /** Outputs equal to one of the strings. */
  public TokenConstraint choice(List<String> choices) {
    return automaton("choice:" + String.join("\u0000", choices), () -> ByteDfa.ofChoices(choices));
  }

  /** JSON texts valid against a schema (see {@link JsonSchemaCompiler} for the subset). */
  public TokenConstraint jsonSchema(JsonNode schema) {
    return automaton("schema:" + schema, () -> ByteDfa.of(JsonSchemaCompiler.compile(schema)));
  }

  /** Any JSON object, nested at most {@value JsonSchemaCompiler#ANY_DEPTH} deep. */
  public TokenConstraint jsonObject() {
    return automaton("json_object", () -> ByteDfa.of(JsonSchemaCompiler.anyObject()));
  }

  /** Outputs in the language of an EBNF grammar (see {@link EbnfParser} for the notation). */
  public GrammarConstraint ebnf(String grammar) {
    return (GrammarConstraint)
        cached("ebnf:" + grammar, () -> GrammarConstraint.ofEbnf(grammar, vocab));
  }

  private TokenConstraint automaton(String key, Supplier<ByteDfa> build) {
    return (TokenConstraint) cached(key, () -> new TokenConstraint(build.get(), vocab));
  }

  private OutputConstraint cached(String key, Supplier<OutputConstraint> build) {
    CompletableFuture<OutputConstraint> mine = new CompletableFuture<>();
    CompletableFuture<OutputConstraint> f;
    synchronized (cache) {
      f = cache.putIfAbsent(key, mine);
    }
    if (f == null) {
      try {
        mine.complete(build.get());
      } catch (RuntimeException | Error e) {
        synchronized (cache) {
          cache.remove(key, mine); // a refused constraint is not kept: each request hears why
        }
        mine.completeExceptionally(e);
        throw e;
      }
      return mine.join();
    }
    try {
      return f.join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      if (e.getCause() instanceof Error err) {
        throw err;
      }
      throw e;
    }
  }
}
