package dev.ringmaster.server.openai;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.ringmaster.server.ServerContext;
import dev.ringmaster.server.api.Json;
import dev.ringmaster.server.http.Endpoint;
import dev.ringmaster.server.http.Exchange;

/** {@code GET /v1/models}: the one served model. */
public final class ModelsEndpoint implements Endpoint {
  private final ServerContext ctx;
  private final long created = System.currentTimeMillis() / 1000;

  /** The endpoint over a server context. */
  public ModelsEndpoint(ServerContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void handle(Exchange ex) {
    ObjectNode out = Json.object();
    out.put("object", "list");
    ObjectNode m = out.putArray("data").addObject();
    m.put("id", ctx.model().name());
    m.put("object", "model");
    m.put("created", created);
    m.put("owned_by", "ringmaster");
    m.put("root", ctx.model().path());
    m.put("max_model_len", ctx.model().maxSequenceLength());
    ex.ok(out);
  }
}
