package dev.leasehold.examples.ledger;

import java.util.List;

/** The chat model as the agent sees it: one chat-completions round with tool calling. */
public interface Model {

    /** One tool call the model asks for. */
    record ToolCall(String id, String name, String argumentsJson) {}

    /** One message of the conversation: user, assistant (maybe with tool calls) or tool result. */
    record Turn(String role, String content, List<ToolCall> toolCalls, String toolCallId) {
        static Turn user(String content) {
            return new Turn("user", content, List.of(), null);
        }

        static Turn tool(String id, String content) {
            return new Turn("tool", content, List.of(), id);
        }
    }

    /** The model's answer: tool calls to run, or the final text when there are none. */
    record Reply(String text, List<ToolCall> toolCalls) {}

    /** Asks the model for the next step. */
    Reply next(String systemPrompt, List<Turn> conversation);
}
