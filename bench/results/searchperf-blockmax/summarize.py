import re,sys,math,collections
log=open(sys.argv[1]).read()
cur=None
data=collections.defaultdict(lambda: collections.defaultdict(list))
meds=[]
for line in log.splitlines():
    m=re.match(r'=== (\S+) (\d+)k run (\d+) .*load average: ([\d.]+)',line)
    if m:
        if cur and meds:
            data[cur]['med1'].append(meds[0]); data[cur]['med3'].append(meds[2])
        cur=(m.group(1),int(m.group(2))); meds=[]
        data[cur]['load'].append(float(m.group(4)))
        continue
    m=re.search(r'median Search\s+([\d.]+) ms',line)
    if m: meds.append(float(m.group(1)))
    m=re.search(r'search/all .*p50\s+([\d.]+) ms.*p90\s+([\d.]+) ms.*p99\s+([\d.]+) ms.*cpu\s+([\d.]+) ms',line)
    if m:
        for k,v in zip(['p50','p90','p99','cpu'],m.groups()): data[cur][k].append(float(v))
    m=re.search(r'search/title .*p99\s+([\d.]+) ms.*cpu\s+([\d.]+) ms',line)
    if m: data[cur]['titlecpu'].append(float(m.group(2)))
    m=re.search(r'warm-up .*p50\s+([\d.]+) ms\s+p99\s+([\d.]+) ms.*cpu\s+([\d.]+) ms',line)
    if m: data[cur]['coldcpu'].append(float(m.group(3))); data[cur]['coldp99'].append(float(m.group(2)))
    m=re.search(r'block cache: (\d+) entries, ([\d.]+) MiB, (\d+) postings \(([\d.]+) bytes',line)
    if m: data[cur]['mib'].append(float(m.group(2))); data[cur]['bpp'].append(float(m.group(4)))
if cur and meds:
    data[cur]['med1'].append(meds[0]); data[cur]['med3'].append(meds[2])
keys=['p50','p90','p99','cpu','med1','med3','titlecpu','coldcpu','coldp99','mib','bpp','load']
vs=sorted(set(k[0] for k in data))
for v in vs:
    print('==',v)
    sizes=sorted(n for (vv,n) in data if vv==v)
    print('%6s '%'N'+' '.join('%9s'%k for k in keys))
    for n in sizes:
        d=data[(v,n)]
        print('%5dk '%n+' '.join('%9s'%('%.2f'%(sum(d[k])/len(d[k])) if d[k] else '-') for k in keys) + '   runs: ' + ' | '.join('%s=%s'%(k,'/'.join('%.2f'%x for x in d[k])) for k in ['p99','cpu']))
    for k in ['p50','p99','cpu','med1','med3','titlecpu']:
        xs=[];ys=[]
        for n in sizes:
            d=data[(v,n)]
            if d[k]:
                xs.append(math.log(n)); ys.append(math.log(sum(d[k])/len(d[k])))
        if len(xs)>=2:
            mx=sum(xs)/len(xs); my=sum(ys)/len(ys)
            b=sum((x-mx)*(y-my) for x,y in zip(xs,ys))/sum((x-mx)**2 for x in xs)
            print('  exponent %-8s fit %.2f   endpoints %.2f'%(k,b,(ys[-1]-ys[0])/(xs[-1]-xs[0])))
