"""Judge audits in the server: sampling a split's verdicts (stratified, one per distinct
answer, the judge's verdict hidden), labelling (skips, two labellers an item), the results and
exports, the leaderboard's judge card, and who may do what."""

from __future__ import annotations

import csv
import io
import re
from collections import Counter

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse

from leaderboard import audit_results, audits, board_store
from leaderboard.audit_results import CONTESTED, judge_cards, results
from leaderboard.models import (
    AuditItem,
    AuditLabel,
    EvaluationRun,
    ItemAnswer,
    ItemVerdict,
    Task,
)
from leaderboard.models.audit import JudgeAudit

JUDGE = "openai:judge-7b@r1|crag-mm-judge-v1"
GRADES = ["correct"] * 6 + ["hallucinated"] * 3 + ["missing"]  # per run, items i0..i9


def add_verdicts(run, judge_id="openai:judge-7b@r1", answer=lambda key: f"answer {key}"):
    for position, grade in enumerate(GRADES):
        key = f"i{position}"
        item = ItemAnswer.objects.create(
            run=run, group="s1", item_key=key, position=position, response=f"raw {key}"
        )
        ItemVerdict.objects.create(
            answer=item, verdict=grade, judge_id=judge_id, prompt_version="crag-mm-judge-v1",
            detail={"query": f"question {key}", "ground_truth": f"truth {key}",
                    "agent_response": answer(key), "domain": "food" if position % 2 else "plant",
                    "turn_idx": 0},
        )  # fmt: skip


@pytest.fixture
def world(teams, splits, make_entry, make_user, challenge):
    runs = [
        make_entry(teams["alpha"], splits["private-test"], 0.3),
        make_entry(teams["beta"], splits["private-test"], 0.2),
    ]
    add_verdicts(runs[0])
    add_verdicts(runs[1], answer=lambda key: f"beta says {key}")
    # beta's second run answers i0..i9 as alpha did: the same answers are labelled once
    add_verdicts(make_entry(teams["beta"], splits["private-test"], 0.3))
    # as the judging stage records it: the run's judge, repeated by each of its verdicts
    EvaluationRun.objects.update(judge_id="openai:judge-7b@r1", prompt_version="crag-mm-judge-v1")
    organiser = make_user("org")
    challenge.organisers.add(organiser)
    return {
        "split": splits["private-test"],
        "org": organiser,
        "bob": make_user("bob", team=teams["beta"]),
        "lena": make_user("lena"),
        "lars": make_user("lars"),
    }


def open_one(world, size=12, **options) -> JudgeAudit:
    return audits.open_audit(world["split"], world["org"], JUDGE, size, seed=5, **options)


def test_an_audit_samples_distinct_answers_stratified_by_verdict_and_slice(world):
    audit = open_one(world, size=12, dimension="domain")
    items = list(audit.items.all())
    assert audit.size == len(items) == 12
    assert audit.menu == ["correct", "missing", "hallucinated"]  # the benchmark's menu
    # 20 distinct answers (alpha's and its copy count once): correct 12, hallucinated 6,
    # missing 2, shared out in proportion with every (verdict, domain) stratum seen
    strata = Counter((item.judge_verdict, item.slice_value) for item in items)
    assert set(strata) == {("correct", "food"), ("correct", "plant"), ("hallucinated", "food"),
                           ("hallucinated", "plant"), ("missing", "food")}  # fmt: skip
    assert sum(n for (verdict, _), n in strata.items() if verdict == "correct") >= 6
    answers = [(item.item_key, item.response) for item in items]
    assert len(set(answers)) == 12
    first = items[0]
    key = first.item_key
    assert (first.question, first.truth) == (f"question {key}", [f"truth {key}"])
    assert first.response in (f"answer {key}", f"beta says {key}")  # as judged, not raw
    again = open_one(world, size=12, dimension="domain")
    assert [(i.item_key, i.response) for i in again.items.all()] == answers  # seeded


def test_opening_refuses_what_it_cannot_audit_naming_it(world, make_user):
    with pytest.raises(ValidationError) as refused:
        audits.open_audit(world["split"], world["org"], "rules@1|x", 0, "colour", 3)
    errors = refused.value.message_dict
    assert "no verdicts of 'rules@1|x'" in errors["judge"][0]
    assert JUDGE in errors["judge"][0]
    assert "from 1 to 5000, not 0" in errors["size"][0]
    assert "no slice dimension 'colour'" in errors["dimension"][0]
    assert "1 or 2 people, not 3" in errors["labels_wanted"][0]
    with pytest.raises(PermissionDenied):
        audits.open_audit(world["split"], world["bob"], JUDGE)
    task = world["split"].task
    Task.objects.filter(pk=task.pk).update(benchmark="m2rag")
    world["split"].task.refresh_from_db()
    with pytest.raises(ValidationError, match="cannot be audited item by item"):
        open_one(world)


def strip_csrf(html: str) -> str:
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", html)


def test_the_labelling_page_never_tells_the_judges_verdict(client, world):
    audit = open_one(world, size=5)
    client.force_login(world["org"])
    url = reverse("leaderboard:label", args=[audit.pk])
    item = audits.next_item(audit, world["org"])
    pages = set()
    for verdict in audit.menu:  # the same item under each verdict renders the same page
        AuditItem.objects.filter(pk=item.pk).update(judge_verdict=verdict)
        html = client.get(url).content.decode()
        assert f'value="{item.pk}"' in html and item.question in html
        pages.add(strip_csrf(html))
    assert len(pages) == 1
    other = open_one(world, size=1).items.get()
    assert client.get(url, {"item": other.pk}).status_code == 404  # another audit's item
    assert client.get(url, {"item": "first"}).status_code == 404


def test_labels_skips_and_two_labellers_an_item(client, world):
    audit = open_one(world, size=4, labels_wanted=2)
    audit.labellers.add(world["lena"], world["lars"])
    org, lena, lars = world["org"], world["lena"], world["lars"]
    first, second, *_ = audit.items.all()
    audits.record_label(first, org, "correct", "looks right")
    assert audits.next_item(audit, org) == second  # the next in order
    assert audits.next_item(audit, lena) == first  # still wants a second label
    audits.record_label(first, lena, "", "cannot tell")  # a skip leaves it to the others
    assert audits.next_item(audit, lena) == second
    assert audits.next_item(audit, lars) == first
    audits.record_label(first, lars, "hallucinated")
    assert audits.next_item(audit, lars) == second  # first has its two labels
    assert audits.progress(audit) | {"untouched": 0} == {
        "items": 4, "done": 1, "untouched": 0, "labels": 2, "skips": 1,
    }  # fmt: skip
    with pytest.raises(ValidationError, match="'wrong' is not a verdict of this audit"):
        audits.record_label(second, org, "wrong")
    audits.record_label(first, org, "hallucinated")  # a labeller changes their label
    assert AuditLabel.objects.get(item=first, labeller=org).verdict == "hallucinated"


def label_all(audit, labeller, verdicts):
    for item, verdict in zip(audit.items.order_by("position"), verdicts, strict=False):
        audits.record_label(item, labeller, verdict)


def test_results_measure_the_judge_and_the_labellers(world, client):
    audit = open_one(world, size=6, labels_wanted=2, dimension="domain")
    audit.labellers.add(world["lena"])
    items = list(audit.items.order_by("position"))
    judged = [item.judge_verdict for item in items]
    # org agrees with the judge on all but the first; lena agrees with org but on the last
    flip = {"correct": "hallucinated", "hallucinated": "correct", "missing": "correct"}
    org_labels = [flip[judged[0]], *judged[1:]]
    lena_labels = [*org_labels[:-1], flip[org_labels[-1]]]
    label_all(audit, world["org"], org_labels)
    label_all(audit, world["lena"], lena_labels)
    found = results(audit)
    assert [labelled.item.pk for labelled in found["contested"]] == [items[-1].pk]
    assert found["judge"]["n"] == 5  # the contested item is left out
    assert found["judge"]["agreement"]["value"] == pytest.approx(4 / 5)
    assert [labelled.item.pk for labelled in found["disagreements"]] == [items[0].pk]
    assert found["disagreements"][0].people == flip[judged[0]]
    assert found["labellers"]["n"] == 6
    assert found["labellers"]["agreement"]["value"] == pytest.approx(5 / 6)
    assert found["labellers"]["kappa"]["value"] is not None
    assert next(iter(found["slices"])) == "domain"  # the audit's dimension first
    assert sum(s["n"] for s in found["slices"]["domain"].values()) == 5
    assert set(found["slices"]["domain"]) <= {"food", "plant"}
    assert sum(s["n"] for s in found["slices"]["turn"].values()) == 5
    assert items[-1].pk in {i.item.pk for i in found["items"] if i.people == CONTESTED}
    client.force_login(world["org"])
    page = client.get(reverse("leaderboard:audit", args=[audit.pk])).content.decode()
    disagreements = page[page.index('<table id="disagreements">') :].split("</table>")[0]
    assert f"<code>{items[0].item_key}</code>" in disagreements
    assert f"<strong>{flip[judged[0]]}</strong>" in disagreements
    contested = page[page.index('<h2 id="contested">') :].split("</ul>")[0]
    assert f"<code>{items[-1].item_key}</code>" in contested
    assert f"?item={items[-1].pk}" in contested
    assert f"lena {lena_labels[-1]}" in contested


def test_exports_are_a_calibration_set_with_both_labels(client, world):
    audit = open_one(world, size=3)
    label_all(audit, world["org"], ["correct", "missing", ""])
    client.force_login(world["org"])
    data = client.get(reverse("leaderboard:audit-json", args=[audit.pk])).json()
    assert (data["judge_id"], data["prompt_version"]) == ("openai:judge-7b@r1", "crag-mm-judge-v1")
    assert data["menu"] == ["correct", "missing", "hallucinated"]
    assert data["judge"]["n"] == 2
    first = data["items"][0]
    assert first["people_label"] == "correct"
    assert first["labels"][0]["labeller"] == "org"
    assert data["items"][2]["labels"][0]["verdict"] == "skipped"
    assert data["items"][2]["people_label"] is None
    response = client.get(reverse("leaderboard:audit-csv", args=[audit.pk]))
    assert 'filename="judge-audit-' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["people_label"] for row in rows] == ["correct", "missing", ""]
    assert [row["judge_verdict"] for row in rows] == [i["judge_verdict"] for i in data["items"]]
    assert rows[0]["labels"] == "org=correct"


def test_who_may_label_see_results_and_be_invited(client, world):
    audit = open_one(world, size=3)
    bob, lena = world["bob"], world["lena"]
    label_url = reverse("leaderboard:label", args=[audit.pk])
    results_url = reverse("leaderboard:audit", args=[audit.pk])
    assert client.get(label_url).status_code == 302  # to sign in
    # bob's team takes part: he may not label (the private split's gold answers), nor be invited
    client.force_login(bob)
    assert client.get(label_url).status_code == 404
    assert client.get(results_url).status_code == 403
    assert client.get(reverse("leaderboard:audit-json", args=[audit.pk])).status_code == 403
    with pytest.raises(ValidationError, match="bob is in team beta, which takes part in CRAG-MM"):
        audits.invite(audit, world["org"], "bob")
    audit.labellers.add(bob)  # even if listed (e.g. he joined a team after the invitation)
    assert client.get(label_url).status_code == 404
    with pytest.raises(PermissionDenied):
        audits.record_label(audit.items.first(), bob, "correct")
    # lena, invited by her address, labels; the results and the verdicts stay the organisers'
    with pytest.raises(PermissionDenied):
        audits.invite(audit, lena, "lena")
    assert audits.invite(audit, world["org"], "lena@example.org") == lena
    client.force_login(lena)
    assert client.get(label_url).status_code == 200
    item = audits.next_item(audit, lena)
    response = client.post(label_url, {"item": item.pk, "verdict": "missing", "note": "n/a"})
    assert response.status_code == 302
    assert AuditLabel.objects.get(item=item, labeller=lena).verdict == "missing"
    assert client.get(results_url).status_code == 403
    assert client.get(reverse("leaderboard:audit-csv", args=[audit.pk])).status_code == 403
    assert client.get(reverse("leaderboard:audits", args=["crag-mm-2026"])).status_code == 403
    with pytest.raises(ValidationError, match="no user 'nobody'"):
        audits.invite(audit, world["org"], "nobody")
    account = client.get(reverse("leaderboard:account")).content.decode()
    assert f"Audit #{audit.pk}" in account  # where an invited labeller finds it
    client.force_login(bob)
    assert f"Audit #{audit.pk}" not in client.get(reverse("leaderboard:account")).content.decode()


def test_an_items_image_is_served_to_its_labellers_only(client, world):
    thumbnail = default_storage.save("thumbnails/x/i.jpg", ContentFile(b"\xff\xd8jpeg"))
    ItemAnswer.objects.update(thumbnail=thumbnail)
    audit = open_one(world, size=2)
    item = audit.items.first()
    url = reverse("leaderboard:audit-image", args=[audit.pk, item.pk])
    audit.labellers.add(world["lena"])
    client.force_login(world["lena"])
    assert url in client.get(reverse("leaderboard:label", args=[audit.pk])).content.decode()
    response = client.get(url)
    assert response.status_code == 200 and b"".join(response.streaming_content) == b"\xff\xd8jpeg"
    client.force_login(world["bob"])
    assert client.get(url).status_code == 404


def test_the_organisers_open_and_finish_an_audit_from_their_pages(client, world):
    client.force_login(world["org"])
    url = reverse("leaderboard:audits", args=["crag-mm-2026"])
    page = client.get(url).content.decode()
    target = f"{world['split'].pk}|{JUDGE}"
    assert f'value="{target}"' in page
    refused = client.post(url, {"target": target, "size": "many"}, follow=True)
    assert "size: a whole number from 1 to 5000" in refused.content.decode()
    response = client.post(url, {"target": target, "size": "4", "double": "1"})
    audit = JudgeAudit.objects.get()
    assert response["Location"] == reverse("leaderboard:audit", args=[audit.pk])
    assert (audit.size, audit.labels_wanted, audit.opened_by) == (4, 2, world["org"])
    finish = reverse("leaderboard:audit-action", args=[audit.pk, "finish"])
    early = client.post(finish, follow=True).content.decode()
    assert "nothing is labelled yet" in early
    label_all(audit, world["org"], [i.judge_verdict for i in audit.items.order_by("position")])
    client.post(finish)
    audit.refresh_from_db()
    assert audit.finished and audit.summary["agreement"]["value"] == 1.0
    assert audit.summary["agreement"]["n"] == 4
    with pytest.raises(ValidationError, match="finished"):
        audits.record_label(audit.items.first(), world["org"], "correct")
    page = client.get(reverse("leaderboard:audit", args=[audit.pk])).content.decode()
    assert "100.0 % [" in page and "N=4" in page


def test_the_leaderboard_shows_each_judges_card_and_its_latest_audit(
    client, world, splits, make_entry, teams
):
    public = splits["public-test"]
    url = reverse("leaderboard:leaderboard", args=["crag-mm-2026", "multi-turn-qa", "public-test"])
    # no done run yet: the task's judge (rules) as configured, not audited
    cards = judge_cards(public, "")
    assert [(c.model, c.revision, c.prompt_version) for c in cards] == [
        ("rules", "1", "crag-mm-rules-v1")
    ]
    assert "not audited" in client.get(url).content.decode()
    audit = open_one(world, size=3)
    label_all(audit, world["org"], [i.judge_verdict for i in audit.items.order_by("position")])
    audit_results.finish(audit, world["org"])
    [card] = judge_cards(world["split"], "")
    assert (card.model, card.revision, card.prompt_version) == (
        "judge-7b",
        "r1",
        "crag-mm-judge-v1",
    )
    assert card.audit == audit and card.agreement["n"] == 3
    # the public test's board shows the same judge's audit (made on the private test)
    make_entry(teams["gamma"], public, 0.4)
    EvaluationRun.objects.filter(split=public).update(
        prompt_version="crag-mm-judge-v1", judge_id="openai:judge-7b@r1"
    )
    page = client.get(url).content.decode()
    assert "judge-7b" in page and "revision r1" in page and "prompt crag-mm-judge-v1" in page
    assert "agreement with people 100.0 % [" in page and "N=3" in page
    assert "Judge audits (organisers)" not in page  # a visitor has no link to the audits


def test_a_visual_rag_audit_labels_with_its_benchmarks_scores(
    client, task, splits, teams, make_entry, make_user, challenge
):
    split = splits["public-test"]
    run = make_entry(teams["alpha"], split, 0.4)  # its scores do not matter here
    Task.objects.filter(pk=task.pk).update(benchmark="visual-rag", settings={})
    split.task.refresh_from_db()
    for position, grade in enumerate(("1", "0.5", "0", "no_answer", "0.7")):
        answer = ItemAnswer.objects.create(
            run=run, group="zero_shot", item_key=f"zero_shot/q{position}", position=position,
            response="{}",
        )  # fmt: skip
        ItemVerdict.objects.create(
            answer=answer, verdict=grade, judge_id="rules@1", prompt_version="vr-rules",
            detail={"question": f"which bird {position}?", "answers": ["a robin", "robin"],
                    "answer": f"a robin {position}", "species": "robin"},
        )  # fmt: skip
    run.prompt_version = "vr-rules"
    run.save(update_fields=["prompt_version"])
    organiser = make_user("org")
    challenge.organisers.add(organiser)
    audit = audits.open_audit(split, organiser, "rules@1|vr-rules", 10, seed=1)
    assert audit.menu == ["1", "0.5", "0", "no_answer"]
    assert sorted(i.judge_verdict for i in audit.items.all()) == ["0", "0.5", "1", "no_answer"]
    client.force_login(organiser)
    html = client.get(reverse("leaderboard:label", args=[audit.pk])).content.decode()
    for key, grade in (("1", "1"), ("2", "0.5"), ("3", "0"), ("4", "no_answer")):
        assert f'value="{grade}" data-key="{key}"><kbd>{key}</kbd> {grade}</button>' in html
    assert "<li>a robin</li><li>robin</li>" in html  # every gold answer


def test_the_calibration_set_labels_every_run_that_gave_a_labelled_answer(world):
    from leaderboard import judge_compare

    audit = open_one(world, size=20, labels_wanted=2)  # every distinct answer
    audit.labellers.add(world["lena"])
    items = list(audit.items.order_by("position"))
    label_all(audit, world["org"], ["missing"] * 20)
    label_all(audit, world["lena"], ["missing"] * 19 + ["correct"])  # the last one contested
    answers = ItemAnswer.objects.select_related("verdict")
    by_place = {(a.run_id, a.item_key): a.pk for a in answers}
    runs = sorted({run for run, _ in by_place})
    labels = judge_compare.human_labels(by_place.values())
    contested = items[-1]
    # the contested answer has no label, whichever run gave it; every other answer has one
    unlabelled = {
        pk
        for (run, key), pk in by_place.items()
        if key == contested.item_key
        and ItemAnswer.objects.get(pk=pk).verdict.detail["agent_response"] == contested.response
    }
    assert set(labels) == set(by_place.values()) - unlabelled
    assert set(labels.values()) == {"missing"}
    # beta's second run answered as alpha did: its answers carry the labels of alpha's
    alpha, _, copy = runs
    for key in {f"i{n}" for n in range(10)} - {contested.item_key}:
        assert labels[by_place[(copy, key)]] == labels[by_place[(alpha, key)]] == "missing"


def test_the_judge_cards_read_the_runs_once_per_version_of_the_results(
    world, splits, make_entry, teams, django_assert_num_queries
):
    public = splits["public-test"]
    make_entry(teams["gamma"], public, 0.4)  # a done run: the split's results changed
    public.refresh_from_db()
    [before] = judge_cards(public, "")
    with django_assert_num_queries(1):  # the audits only: the runs' judges are cached
        judge_cards(public, "")
    # a run judged by another judge enters the board: a new version of the results
    run = make_entry(teams["alpha"], public, 0.5)
    EvaluationRun.objects.filter(pk=run.pk).update(
        judge_id="openai:judge-13b@r2", prompt_version="crag-mm-judge-v1"
    )
    board_store.results_changed(public.pk)
    public.refresh_from_db()
    models = {card.model for card in judge_cards(public, "")}
    assert models == {before.model, "judge-13b"}
