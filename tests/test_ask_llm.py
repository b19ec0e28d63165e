"""The OpenAI-compatible client and the structured-answer parsing, against a real HTTP stub on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import time

import pytest
from openai_stub import OpenAIStub, Reply, json_reply

from medrag.answer.llm import ChatClient, LlmBadReply, LlmNotConfigured, LlmUnavailable, normalize_base_url
from medrag.answer.structured import ANSWER_SCHEMA, SentenceStream, parse_answer, stream_sentences

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def stub():
    with OpenAIStub(model="smol-test") as server:
        yield server


@pytest.fixture
def client(stub):
    stub.reset()
    with ChatClient(stub.url, timeout=5.0, retries=1) as chat:
        yield chat


def test_structured_request_uses_response_format_json_schema_and_never_guided_params(stub, client):
    stub.queue(json_reply([{"text": "Oxygen is covered.", "sources": [1]}]))
    value = client.chat_json(MESSAGES, ANSWER_SCHEMA, schema_name="grounded_answer", max_tokens=64)
    assert value == {"sentences": [{"text": "Oxygen is covered.", "sources": [1]}]}
    (body,) = stub.requests
    assert body["model"] == "smol-test"  # read from /v1/models, nothing configured
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "grounded_answer", "schema": ANSWER_SCHEMA, "strict": True}}
    assert not [key for key in body if key.startswith("guided")]
    assert body["messages"] == MESSAGES and body["max_tokens"] == 64 and body["temperature"] == 0.0
    assert body["stream"] is False


def test_configured_model_skips_the_models_endpoint(stub):
    stub.reset()
    with ChatClient(stub.url, model="configured-name") as chat:
        stub.queue(Reply(content="plain"))
        assert chat.chat_text(MESSAGES) == "plain"
    assert stub.model_requests == 0 and stub.requests[0]["model"] == "configured-name"


def test_streaming_yields_pieces_and_the_sentence_parser_emits_each_sentence_when_complete(stub, client):
    sentences = [{"text": f"Sentence {n} about oxygen.", "sources": [n]} for n in (1, 2, 3)]
    stub.queue(json_reply(sentences))
    pieces = list(client.stream_chat(MESSAGES, schema=ANSWER_SCHEMA))
    assert len(pieces) > 5 and json.loads("".join(pieces)) == {"sentences": sentences}
    assert stub.requests[0]["stream"] is True and "response_format" in stub.requests[0]
    parser = SentenceStream()
    emitted_at = []
    for index, piece in enumerate(pieces):
        for sentence in parser.feed(piece):
            emitted_at.append((index, sentence.text))
    assert [text for _, text in emitted_at] == [s["text"] for s in sentences]
    assert emitted_at[0][0] < len(pieces) // 2  # the first sentence came out long before the stream ended


def test_a_500_is_retried_once_then_succeeds(stub, client):
    stub.queue(Reply(status=500), Reply(content="second try"))
    assert client.chat_text(MESSAGES) == "second try"
    assert len(stub.requests) == 2


def test_two_500s_are_a_clear_unavailable_error(stub, client):
    stub.queue(Reply(status=500), Reply(status=503))
    with pytest.raises(LlmUnavailable, match="HTTP 503"):
        client.chat_text(MESSAGES)
    assert len(stub.requests) == 2


def test_a_4xx_is_not_retried(stub, client):
    stub.queue(Reply(status=400))
    with pytest.raises(LlmBadReply, match="HTTP 400"):
        client.chat_text(MESSAGES)
    assert len(stub.requests) == 1


def test_a_slow_server_times_out_after_one_retry(stub):
    stub.reset()
    stub.queue(Reply(content="late", delay=1.5), Reply(content="late", delay=1.5))
    started = time.monotonic()
    with ChatClient(stub.url, model="m", timeout=0.4, retries=1) as chat, pytest.raises(
            LlmUnavailable, match="timed out after 0.4 s"):
        chat.chat_text(MESSAGES)
    assert time.monotonic() - started < 2.5
    assert len(stub.requests) == 2


def test_malformed_json_and_cut_off_replies_are_bad_replies(stub, client):
    stub.queue(Reply(content='{"sentences": [{"text": "Oxygen'))
    with pytest.raises(LlmBadReply, match="not valid JSON"):
        client.chat_json(MESSAGES, ANSWER_SCHEMA)
    stub.queue(Reply(raw_body="<html>proxy error</html>"))
    with pytest.raises(LlmBadReply, match="not a chat completion"):
        client.chat_text(MESSAGES)
    stub.queue(Reply(content='{"sentences": []}', finish_reason="length"))
    with pytest.raises(LlmBadReply, match="cut off"):
        client.chat_json(MESSAGES, ANSWER_SCHEMA)


def test_a_stream_that_breaks_off_is_a_bad_reply_after_the_complete_sentences(stub, client):
    sentences = [{"text": "First complete sentence.", "sources": [1]}, {"text": "Second one.", "sources": [2]}]
    stub.queue(Reply(content=json.dumps({"sentences": sentences}), stream_break_after=11))
    got = []
    with pytest.raises(LlmBadReply, match="not valid JSON"):
        for sentence in stream_sentences(client.stream_chat(MESSAGES, schema=ANSWER_SCHEMA)):
            got.append(sentence.text)
    assert got == ["First complete sentence."]


def test_nothing_listening_is_unavailable():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with ChatClient(f"http://127.0.0.1:{port}/v1", model="m", timeout=2.0, retries=1) as chat, pytest.raises(
            LlmUnavailable, match="unreachable"):
        chat.chat_text(MESSAGES)


def test_base_url_normalisation():
    assert normalize_base_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000/v1"
    assert normalize_base_url("http://vllm:8000/v1/") == "http://vllm:8000/v1"
    with pytest.raises(LlmNotConfigured):
        normalize_base_url("127.0.0.1:8000")


def test_parse_answer_moves_inline_citations_out_of_the_text_and_rejects_other_shapes():
    (sentence,) = parse_answer({"sentences": [{"text": "Oxygen is covered [2][3].", "sources": [1]}]})
    assert sentence.text == "Oxygen is covered." and sentence.sources == [1, 2, 3]
    (sentence,) = parse_answer({"sentences": [{"text": "Listed in [1, 4].", "sources": []}]})
    assert sentence.sources == [1, 4]
    for bad in ({"answer": "x"}, {"sentences": [{"sources": [1]}]}, {"sentences": [{"text": "x", "sources": "1"}]},
                {"sentences": [{"text": "x", "sources": [True]}]}):
        with pytest.raises(LlmBadReply):
            parse_answer(bad)
