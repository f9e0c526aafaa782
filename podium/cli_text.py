"""The command line's text output: the API's answers as a person reads them (``--json`` prints them
as they are)."""

from __future__ import annotations

from typing import Any


def format_submission(body: dict[str, Any]) -> str:
    lines = [
        f"submission #{body['id']} {body['method_name']} (team {body['team']}, "
        f"{body['challenge']}): {body['state']}",
    ]
    chosen = [
        f"{c['task']} ({', '.join(c['splits'])})" if c["splits"] else c["task"]
        for c in body.get("evaluated_on", [])
    ]
    if chosen:
        lines.append(f"  evaluated on: {', '.join(chosen)}")
    if body.get("failure_reason"):
        lines.append(f"  failed: {body['failure_reason']}")
    for run in body.get("runs", []):
        progress = f"{run['items_done']}/{run['items_total']} items"
        reason = f"  {run['failure_reason']}" if run["failure_reason"] else ""
        where = f"{run['split_kind']}/{run['setting']}" if run.get("setting") else run["split_kind"]
        lines.append(
            f"  run #{run['id']:<6} {run['task_id']:<28} {where:<13} "
            f"{run['state']:<9} {progress}{_score(run)}{reason}"
        )
    return "\n".join(lines)


def _score(run: dict[str, Any]) -> str:
    """A done run's score as the server gives it, or why it is not shown."""
    score = run.get("score")
    if score is None:
        hidden = run.get("score_hidden")
        return "  score hidden until the split's results are public" if hidden else ""
    interval = ""
    if score["ci95"]:
        low, high = (_shown(value, score) for value in score["ci95"])
        interval = f" [{low}, {high}]"
    return f"  {score['label']} {_shown(score['value'], score)}{interval}"


def format_quota(body: dict[str, Any]) -> str:
    """The preflight's answer: may the team submit, and each chosen task's quota use."""
    verdict = "allowed" if body["allowed"] else "refused"
    if body["exempt"]:
        verdict = "exempt (organiser)"
    lines = [f"team {body['team']} on {body['challenge']}: {verdict}"]
    if body["problem"]:
        lines.append(f"  {body['problem']}")

    def limit(value: int | None) -> str:
        return "-" if value is None else str(value)

    lines.append(f"  {'task':<28} {'24 h':>7} {'total':>7} {'running':>7} {'left':>5}  splits")
    for task in body["tasks"]:
        lines.append(
            f"  {task['task']:<28} {task['today']:>3}/{limit(task['quota_per_day']):<3} "
            f"{task['total']:>3}/{limit(task['quota_total']):<3} "
            f"{task['concurrent']:>3}/{limit(task['quota_concurrent']):<3} "
            f"{limit(task['remaining']):>5}  {', '.join(task['splits'])}"
        )
    return "\n".join(lines)


def _shown(value: float | None, metric: dict[str, Any]) -> str:
    """A value as the API's metric declaration says (fractions x100)."""
    if value is None:
        return "-"
    if metric["scale"] == "count":
        return str(int(value))
    if metric["scale"] == "ratio":
        return f"{value:.2f}"
    return f"{value * 100 if metric['scale'].endswith('fraction') else value:.1f}"


def format_leaderboard(body: dict[str, Any]) -> str:
    """The board as text: its first headline columns (those its entries have: a setting's runs
    lack the others), then each entry's scores across settings, if any."""
    split = body["split"]
    declared = {metric["name"]: metric for metric in body["metrics"]}
    primary = declared[body["primary_metric"]]
    present = {name for entry in body["entries"] for name in entry["metrics"]}
    others = [
        m
        for m in body["metrics"]
        if m["headline"] and m is not primary and (not present or m["name"] in present)
    ][:3]
    setting = f" [{body['setting']}]" if body.get("setting") else ""
    lines = [
        f"{split['challenge']}/{split['task_id']}/{split['kind']}{setting}: ranked by "
        f"{primary['label']} (one entry per team: {body['entry_rule']})",
        f"{'rank':>4}  {'team':<20} {'method':<24} {primary['label'][:12]:>12} {'95% CI':>13} "
        + " ".join(f"{m['label'][:10]:>10}" for m in others),
    ]
    for entry in body["entries"]:
        rank = "base" if entry["is_baseline"] else str(entry["rank"] or "-")
        low, high = entry["primary_ci95"] or (None, None)
        interval = f"{_shown(low, primary)}..{_shown(high, primary)}"
        cells = " ".join(f"{_shown(entry['metrics'].get(m['name']), m):>10}" for m in others)
        lines.append(
            f"{rank:>4}  {entry['team'][:20]:<20} {entry['method_name'][:24]:<24} "
            f"{_shown(entry['primary'], primary):>12} {interval:>13} {cells}"
        )
    if not body["entries"]:
        lines.append("  (no entries yet)")
    across = [entry for entry in body["entries"] if entry.get("derived")]
    if across:
        lines.append("across settings:")
    for entry in across:
        values = " ".join(
            f"{name}={'-' if value is None else f'{value:.3f}'}"
            for name, value in entry["derived"].items()  # the server's order: gcue@5, ...
        )
        lines.append(f"      {entry['team'][:20]:<20} {entry['method_name'][:24]:<24} {values}")
    return "\n".join(lines)


def format_kit(body: dict[str, Any]) -> str:
    lines = [f"starter kit of {body['challenge']} (version {body['version'][:12]}):"]
    for file in body["files"]:
        how = "downloaded" if file["fetched"] else "already there"
        lines.append(f"  {file['path']}  {file['size']} bytes  sha256 {file['sha256']} ({how})")
    return "\n".join(lines)
