package dev.ringmaster.server.openai;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.engine.batch.TokenEvent;
import dev.ringmaster.server.generation.ChoiceEvent;
import java.util.List;

/** How one endpoint writes a choice: completions put {@code text}, chat a {@code delta}. */
interface ChoiceFormat {
  /** The {@code object} of a streamed chunk. */
  String chunkObject();

  /** A streamed choice carrying new text and the tokens behind it, or null to hold it back. */
  ObjectNode delta(int index, String text, List<TokenEvent> tokens, boolean first);

  /** A chunk with what {@link #delta} held back of an index, sent before its finish, or null. */
  default ObjectNode held(ChoiceEvent.Done done) {
    return null;
  }

  /** The last streamed choice of an index, with its finish reason. */
  ObjectNode finish(ChoiceEvent.Done done);
}
