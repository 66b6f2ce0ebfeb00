"""eval_retrieval's report groups the questions that name a period, beside their own kind."""

import pytest

from memory.evaluation import DATED, evaluate, format_table

DATASET = {
    "owners": ["ana"],
    "memories": [
        {
            "id": "m1",
            "owner": "ana",
            "content": "The boiler broke on 2 March 2026.",
            "created_at": "2026-03-02T09:00:00Z",
        },
        {
            "id": "m2",
            "owner": "ana",
            "content": "Adopted a cat called Miso.",
            "created_at": "2026-04-01T09:00:00Z",
        },
    ],
    "queries": [
        {"owner": "ana", "query": "What broke in March 2026?", "kind": "temporal", "relevant": ["m1"]},
        {"owner": "ana", "query": "What is the cat called?", "kind": "lexical", "relevant": ["m2"]},
        {"owner": "ana", "query": "What did the dog eat in May?", "kind": "negative", "relevant": []},
    ],
}


@pytest.mark.django_db
def test_questions_that_name_a_period_are_reported_together():
    (report,) = evaluate(DATASET, strategies=["keyword"], served=False)
    recall = report["recall"]
    # the unanswerable question is not scored; the dated answerable one counts in its kind and in DATED
    assert recall[DATED]["n"] == 1 and recall["temporal"]["n"] == 1 and recall["overall"]["n"] == 2
    assert recall[DATED]["R@5"] == 1.0
    table = format_table(report)
    assert table.index(DATED) < table.index("overall")
