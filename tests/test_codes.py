"""Code clauses: NCCL return-code chains and Xid lines in any spelling, decoded through
their tables (triage/evidence/nccl.toml, triage/evidence/xid.toml); multi-line clauses
(`near`): a line that needs a companion line a few lines before it."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.engine import analyze_text, get_rules
from triage.engine.codes import code_table
from triage.engine.rules import load_rule
from triage.errors import RuleError
from triage.evidence.xid import parse_xid_line, xid_table

RULES = get_rules()


def _top(text: str) -> tuple[str, str, str] | None:
    rep = analyze_text(text, rules=RULES)
    if not rep.diagnoses:
        return None
    d = rep.diagnoses[0]
    return d.signature, d.confidence.label, d.evidence[0].text if d.evidence else ""


def _sigs(text: str) -> dict[str, str]:
    return {d.signature: d.confidence.label for d in analyze_text(text, rules=RULES).diagnoses}


# -- NCCL: `<file>.cc:NNN -> N` chains, decoded by ncclResult_t --------------------------

SYSTEM_CHAIN = (
    "step 10 loss 2.31\n"
    "gpu-07:3112:3201 [0] NCCL INFO misc/socket.cc:559 -> 2\n"
    "gpu-07:3112:3201 [0] NCCL INFO bootstrap.cc:256 -> 2\n"
    "gpu-07:3112:3201 [0] NCCL INFO init.cc:1089 -> 2\n"
)


def test_nccl_chain_alone_is_likely_with_the_first_chain_line_and_the_decoded_name():
    sig, conf, text = _top(SYSTEM_CHAIN)  # type: ignore[misc]
    assert (sig, conf) == ("nccl-error", "likely")
    assert "misc/socket.cc:559 -> 2" in text
    assert "ncclSystemError" in text


@pytest.mark.parametrize(
    "line, name",
    [
        ("gpu-b-22:881:1433 [3] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]", "ncclRemoteError"),
        ("node1:12:99 [1] NCCL INFO transport/net.cc:1298 -> 6 [Async thread]", "ncclRemoteError"),
        ("gpu-a-03:90112:90233 [2] NCCL INFO transport/p2p.cc:204 -> 1", "ncclUnhandledCudaError"),
        ("[0] hostA:40217:40258 [0] NCCL INFO transport/net.cc:288 -> 3", "ncclInternalError"),
    ],
)
def test_nccl_chain_codes_decode(line, name):
    sig, conf, text = _top(line + "\n")  # type: ignore[misc]
    assert (sig, conf) == ("nccl-error", "likely")
    assert name in text


@pytest.mark.parametrize("code", ["0", "7"])
def test_nccl_success_and_in_progress_are_not_errors(code):
    # the same line with an error code fires: only the table tells them apart
    assert _sigs("node1:12:99 [1] NCCL INFO init.cc:1400 -> 2\n").get("nccl-error") == "likely"
    assert "nccl-error" not in _sigs(f"node1:12:99 [1] NCCL INFO init.cc:1400 -> {code}\n")


def test_nccl_invalid_usage_chain_is_an_error_too():
    sig, conf, text = _top("node1:12:99 [1] NCCL INFO init.cc:1400 -> 5\n")  # type: ignore[misc]
    assert (sig, conf) == ("nccl-error", "likely") and "ncclInvalidUsage" in text


def test_nccl_chain_after_a_warn_line_is_confirmed():
    log = (
        "pc2:1882:1935 [0] NCCL WARN socketProgressOpt: Call to recv from 10.0.0.2<43152> "
        "failed : Broken pipe\n"
        "pc2:1882:1935 [0] NCCL INFO misc/socket.cc:749 -> 6\n"
        "pc2:1882:1935 [0] NCCL INFO transport/net_socket.cc:474 -> 6\n"
    )
    assert _sigs(log).get("nccl-error") == "confirmed"


@pytest.mark.parametrize(
    "line",
    [
        "node3:77:90 [2] NCCL WARN Net : Call to recv from 10.1.2.3<40213> failed : Broken pipe",
        "node3:77:90 [2] NCCL WARN Net : Call to send to 10.1.2.3<40213> failed : Connection reset by peer",
        "node3:77:90 [2] NCCL WARN socketStartConnect: Connect to 10.1.2.3<40213> failed : Software caused connection abort",
    ],
)
def test_nccl_warn_socket_failures(line):
    assert _sigs(line + "\n").get("nccl-error") == "likely"


def test_nccl_warn_optional_transport_stays_quiet():
    # "Call to ... failed" is a failure for a socket, a notice for an optional transport
    assert "nccl-error" not in _sigs("node1:311:311 [0] NCCL WARN Call to ibv_open_device failed\n")
    assert "nccl-error" in _sigs(
        "node1:311:311 [0] NCCL WARN Call to recv from 10.0.0.2<1> failed : Broken pipe\n"
    )


# -- Xid: one shared reading, routed through the table -----------------------------------


@pytest.mark.parametrize(
    "line, sig",
    [
        (
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=48211, name=python, GPU has fallen off the bus.",
            "gpu-fell-off-bus",
        ),
        (
            "NVRM: Xid (0000:3b:00): 48, pid=48211, name=python, An uncorrectable double bit error",
            "gpu-ecc-error",
        ),
        ("NVRM: Xid 74: NVLink fatal link down on GPU 3", "xid-error"),
        ("Xid 79: GPU reset required before reuse", "gpu-fell-off-bus"),
        (
            "kernel: [12345.6] NVRM: Xid (PCI:0000:3b:00): 48, pid=9, name=python, An uncorrectable double bit error",
            "gpu-ecc-error",
        ),
        (
            "Mar 03 11:27:19 node-0412 kernel: NVRM: Xid (PCI:0000:3b:00 GPU-I:01 GPU-CI:00): 94, pid=1, name=python, Contained: SM (0x1).",
            "gpu-ecc-error",
        ),
        ("health check: Xid error 79 on GPU 2, node drained", "gpu-fell-off-bus"),
        ("DCGM_FR_XID_ERROR: Detected XID 48 for GPU 0", "gpu-ecc-error"),
        ("XidCriticalError: Xid=74 on Device=GPU-8a1b2c3d, the device will go unhealthy.", "xid-error"),
        ("NVRM: Xid (PCI:0000:3b:00): 64, pid=1, name=python, Failed to persist row remap", "gpu-ecc-error"),
        ("NVRM: Xid (PCI:0000:3b:00): 140, pid=1, name=python, unrecovered ECC error", "gpu-ecc-error"),
        ("NVRM: Xid (PCI:0000:3b:00): 157, pid=1, name=python, a code the table does not list", "xid-error"),
    ],
)
def test_xid_spellings_route_through_the_table(line, sig):
    top = _top(line + "\n")
    assert top is not None and top[0] == sig
    # one signature per code: the table routes it, no other Xid rule fires too
    xid_rules = {"gpu-fell-off-bus", "gpu-ecc-error", "xid-error"}
    assert set(_sigs(line + "\n")) & xid_rules == {sig}


def test_xid_evidence_names_the_code():
    top = _top("NVRM: Xid 74: NVLink fatal link down on GPU 3\n")
    assert top is not None and top[0] == "xid-error"
    assert top[2].startswith("NVRM: Xid 74: NVLink fatal link down") and "[Xid 74: NVLINK Error" in top[2]


@pytest.mark.parametrize(
    "line",
    [
        "XID errors: 0",
        "pixid 79 rendered",
        "parsed 12 Xids from the previous boot",
        "NVRM: Xid (PCI:0000:3b:00): 63, pid=1, name=python, Row remapping event",
    ],
)
def test_xid_lookalikes_and_notices_do_not_alarm(line):
    assert all(c == "possible" for c in _sigs(line + "\n").values())
    # while the real report beside it does
    assert _sigs(line + "\nXid 79: GPU reset required before reuse\n").get("gpu-fell-off-bus") == "confirmed"


def test_a_kernel_xid_line_cut_inside_its_code_is_not_read_as_another_code():
    # "...): 7" at the edge of a paste may be 79: no Xid signature from it
    sigs = _sigs("step 9 loss 1.2\nNVRM: Xid (PCI:0000:3b:00): 7")
    assert not set(sigs) & {"xid-error", "gpu-fell-off-bus", "gpu-ecc-error"}
    assert (
        _sigs("NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.")[
            "gpu-fell-off-bus"
        ]
        == "confirmed"
    )


def test_every_xid_code_is_owned_by_its_signature_rule_only():
    """The table decides: each code reaches exactly the rule its row names."""
    rules = {r.id: r for r in RULES}
    for code, info in xid_table().items():
        owners = {
            r.id
            for r in rules.values()
            for c in r.clauses
            if c.kind == "code" and c.table is not None and c.table.name == "xid" and c.owns(code)
        }
        assert owners == {info.signature}, (code, owners)


def test_kernel_log_parser_reads_the_same_spellings():
    x = parse_xid_line("NVRM: Xid 74: NVLink fatal link down on GPU 3")
    assert x is not None and x["code"] == 74
    y = parse_xid_line("NVRM: Xid (0000:3b:00): 79, pid=12, name=python, GPU has fallen off the bus.")
    assert y is not None and (y["code"], y["pci"], y.get("pid")) == (79, "0000:3b:00", 12)
    z = parse_xid_line("NVRM: Xid (PCI:0000:b7:00): 48, pid=48211, name=python, An uncorrectable")
    assert z is not None and (z["code"], z["pci"], z["process"]) == (48, "0000:b7:00", "python")
    assert z["message"] == "An uncorrectable"


def test_nccl_table_is_nccl_result_t():
    t = code_table("nccl")
    names = {c: t.rows[c]["name"] for c in t.rows}
    assert names == {
        0: "ncclSuccess",
        1: "ncclUnhandledCudaError",
        2: "ncclSystemError",
        3: "ncclInternalError",
        4: "ncclInvalidArgument",
        5: "ncclInvalidUsage",
        6: "ncclRemoteError",
        7: "ncclInProgress",
    }


# -- multi-line messages ------------------------------------------------------------------

FELL_OFF = (
    "Mar 03 11:27:19 node-0412 kernel: NVRM: The NVIDIA GPU 0000:5d:00.0\n"
    "                                          NVRM: (PCI ID: 10de:2330) installed in this system has\n"
    "                                          NVRM: fallen off the bus and is not responding to commands.\n"
    "Mar 03 11:27:19 node-0412 kernel: nvidia: probe of 0000:5d:00.0 failed with error -1\n"
)


def test_multiline_fallen_off_the_bus_with_no_xid_line_is_confirmed():
    assert _sigs(FELL_OFF).get("gpu-fell-off-bus") == "confirmed"


def test_fallen_off_the_bus_tail_alone_is_likely():
    log = "fallen off the bus and is not responding to commands.\n"
    assert _sigs(log).get("gpu-fell-off-bus") == "likely"


# -- validation: bad code clauses name the file and the key -------------------------------

BASE = """id = "{id}"
title = "t"
category = "hardware"
[[match]]
kind = "code"
{clause}
[examples]
fire = ["NVRM: Xid 74: NVLink fatal link down on GPU 3"]
quiet = ["nothing"]
"""


@pytest.mark.parametrize(
    "clause, key, problem",
    [
        ('table = "xdi"\nselect = { signature = "xid-error" }', "match[0].table", "unknown code table"),
        ('table = "xid"\nselect = { signatur = "xid-error" }', "match[0].select", "no field"),
        ('table = "xid"\nselect = { signature = "xid-eror" }', "match[0].select", "no row"),
        (
            'table = "nccl"\nliteral = "NCCL INFO"\nregex = \'NCCL INFO \\S+ -> \\d+\'\n'
            'select = { signature = "nccl-error" }',
            "match[0].regex",
            "(?P<code>",
        ),
        ('table = "nccl"\nselect = { signature = "nccl-error" }', "match[0].regex", "required"),
        ('select = { signature = "xid-error" }', "match[0].table", "required"),
        (
            'table = "xid"\nselect = { signature = "xid-error" }\nnear = { literal = "NVRM: GPU at", '
            'regex = "NVRM: GPU at", within = 40 }',
            "match[0].near.within",
            "1 to 8",
        ),
    ],
)
def test_bad_code_clause_is_one_clear_error(tmp_path: Path, clause, key, problem):
    path = tmp_path / "x-rule.toml"
    path.write_text(BASE.format(id="x-rule", clause=clause), encoding="utf-8")
    with pytest.raises(RuleError) as e:
        load_rule(path)
    assert e.value.key == key and problem in e.value.problem
    assert str(path) in e.value.message and "\n" not in e.value.message


# -- the kernel-log scan reads Xids and lost GPUs the way the rules do ---------------------


def test_kernel_scan_reads_short_xid_lines_and_the_multiline_fallen_off_message():
    from triage.evidence import facts_from_snapshot
    from triage.evidence.sources.kernel import scan_kernel_lines

    lines = ["[  812.4] NVRM: Xid 74: NVLink fatal link down on GPU 3", *FELL_OFF.splitlines()]
    k = scan_kernel_lines(lines, "dmesg")
    assert [x["code"] for x in k["xid"]] == [74]
    assert len(k["fallen_off_bus"]) == 1
    f = facts_from_snapshot({"schema": "triage.snapshot/1", "kernel": k})
    assert f["kernel.xid_other_hw"] == [74] and f["kernel.fallen_off_bus"] is True
