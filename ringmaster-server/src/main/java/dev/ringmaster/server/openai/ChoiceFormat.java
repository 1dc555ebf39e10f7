package dev.ringmaster.server.openai;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.server.generation.ChoiceEvent;
import java.util.List;

/** How one endpoint writes a choice: completions put {@code text}, chat a {@code delta}. */
interface ChoiceFormat {
  /** The {@code object} of a streamed chunk. */
  String chunkObject();

  /**
   * The streamed choices (one per chunk) that new text and the tokens behind it make; none to hold
   * it back.
   */
  List<ObjectNode> delta(int index, String text, List<TokenEvent> tokens, boolean first);

  /** Chunks with what {@link #delta} held back of an index, sent before its finish. */
  default List<ObjectNode> held(ChoiceEvent.Done done) {
    return List.of();
  }

  /** The last streamed choice of an index, with its finish reason. */
  ObjectNode finish(ChoiceEvent.Done done);
}
