-- The model's output of each round of a chat request, its plan: the tool calls it asked for, or its
-- final text. Persisted before any call of the round runs, so a resent request resumes the plan
-- (completed effects replay, the rest run) and asks the model only for rounds not yet here. The
-- primary key lets one plan per round exist: a second execution that reaches the same round reads
-- the first one's plan instead of writing its own.
CREATE TABLE chat_round (
    request_id VARCHAR(32) NOT NULL,   -- leasehold_request.id
    round_no   INT         NOT NULL,   -- 1, 2, 3
    reply_json TEXT NOT NULL,   -- {"text": ..., "toolCalls": [{"id", "name", "argumentsJson"}]}
    created_at TIMESTAMP   NOT NULL,
    PRIMARY KEY (request_id, round_no)
);
