import re,sys,statistics as st
runs={'before':[], 'after':[]}
cur=None
for line in open(sys.argv[1]):
    m=re.match(r'== (\w+) run',line)
    if m: cur=m.group(1); runs[cur].append({}); continue
    m=re.search(r'(search/\w+|warm-up) .*?p50\s+([\d.]+) ms.*?p99\s+([\d.]+) ms.*?cpu\s+([\d.]+) ms/query',line)
    if m and cur: runs[cur][-1][m.group(1)]=tuple(map(float,m.groups()[1:]))
for k in ['search/all','search/ident','search/topic','search/error','search/title','warm-up']:
    out=[]
    for v in ['before','after']:
        xs=[r[k] for r in runs[v] if k in r]
        out.append(tuple(st.median(x[i] for x in xs) for i in range(3)))
    b,a=out
    print(f"{k:13s} before p50 {b[0]:.3f} p99 {b[1]:.3f} cpu {b[2]:.3f} | after p50 {a[0]:.3f} p99 {a[1]:.3f} cpu {a[2]:.3f} | after/before p50 {a[0]/b[0]:.2f} p99 {a[1]/b[1]:.2f} cpu {a[2]/b[2]:.2f}  (medians of {len(runs['before'])} runs each)")
