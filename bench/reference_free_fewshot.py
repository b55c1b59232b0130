"""A probe that did not ship: reference-free sufficiency with four worked examples.

The shipped reference-free prompt (``judges.sufficiency``) is zero-shot. Here four SQuAD 2.0
development rows that are neither calibration rows nor among bench/agreement.py's 40 (two
contrasting pairs of questions on one paragraph each, with hand-written replies) go into
the prompt as earlier user / assistant turns; the 30 SQuAD 2.0 unanswerable calibration
rows (bench/calibration_ids.txt) are then judged and P(yes) at the verdict token is read.
Prints each row, the ROC AUC of P(yes) against the label (the zero-shot prompt has 0.67 on
these rows, bench/calibrate.py), and accuracy at a few thresholds. Measured 2026-11-30:
AUC 0.57. Calls go straight to the in-process llama.cpp runtime and are cached in
bench/_work/variants.

    python bench/reference_free_fewshot.py [squad2|clapnq]
"""

import json
import sys

sys.path.insert(0, '.')
from completeness_variants import Judge, WORK, ROOT
from agreement import CALIBRATION
from ragjudge.judges import sufficiency
from ragjudge.judges.base import field_probability
from ragjudge.records import EvalRecord, Passage
from sklearn.metrics import roc_auc_score
p=ROOT.parent/'shared'/'data'
byid={}
for f in ('squad2_unanswerable_sufficiency_dev','clapnq_sufficiency_dev'):
    for l in open(p/f'{f}.jsonl'):
        r=json.loads(l); byid[r['id']]=(f,r)
def rec(r):
    ctx=[c if isinstance(c,str) else c['content'] for c in r['context']]
    return EvalRecord(index=0, request=r['request'], passages=[Passage(c) for c in ctx])
EX=[
 ('squad2-c99fa2fea3f9d28a92b6a0fce', {"needed":"when the French Wars of Religion took place","verdict":"yes","quote":"The French Wars of Religion in the 16th century and French Revolution in the 18th successively destroyed much of what existed in the way of the architectural and artistic remnant of this Norman creativity.","rationale":"Passage 1 dates the French Wars of Religion to the 16th century."}),
 ('squad2-7fd3513eb46cbb81af1eb2dda', {"needed":"which person or group fled from southern Italy","verdict":"no","quote":"NONE","rationale":"The passage says monks fled to southern Italy, not from it; it names no one who fled from southern Italy."}),
 ('squad2-079dff033ccebfc8f8a4427b1', {"needed":"which person patronised the monks in Italy","verdict":"yes","quote":"Under the Norman abbot Robert de Grantmesnil, several monks of Saint-Evroul fled to southern Italy, where they were patronised by Robert Guiscard and established a Latin monastery at Sant'Eufemia.","rationale":"Passage 1 names Robert Guiscard as the monks' patron in southern Italy."}),
 ('squad2-6bfb5cd7eadea290e951eae5b', {"needed":"which wars France fought in the 1600s (the 17th century)","verdict":"no","quote":"NONE","rationale":"The passage mentions wars of the 16th century (the 1500s) and the 18th century, not of the 1600s."}),
]
shots=[]
for i,reply in EX:
    pr=sufficiency.prepare(rec(byid[i][1]))
    shots += [pr.messages[1], {"role":"assistant","content":json.dumps(reply)}]
judge=Judge(WORK/'variants')
which=sys.argv[1] if len(sys.argv) > 1 else 'squad2'  # squad2 or clapnq
ids=[i for i in CALIBRATION if i in byid and byid[i][0].startswith(which)]
ids.sort()
ys=[];ps=[]; ps0=[]
for n,i in enumerate(ids):
    r=byid[i][1]; pr=sufficiency.prepare(rec(r))
    msgs=[pr.messages[0]]+shots+[pr.messages[1]]
    rep=judge.chat(msgs, pr.response_format, 512, True)
    py=field_probability(rep['choices'][0].get('logprobs'))
    if len(sys.argv)>2:
        rep0=judge.chat(pr.messages, pr.response_format, 512, True); ps0.append(field_probability(rep0['choices'][0].get('logprobs')))
    ys.append(bool(r['label_sufficient'])); ps.append(py if py is not None else 0.5)
    print(n, i, r['label_sufficient'], round(ps[-1],3), flush=True)
print(which, 'n', len(ys), 'few-shot AUC', round(roc_auc_score(ys,ps),3))
if ps0: print('zero-shot AUC same client', round(roc_auc_score(ys,[x if x is not None else 0.5 for x in ps0]),3))
import numpy as np
for t in (0.5,0.6,0.7,0.8,0.84,0.9):
    print(t, 'acc', round(np.mean([(p>=t)==y for p,y in zip(ps,ys)]),3))
