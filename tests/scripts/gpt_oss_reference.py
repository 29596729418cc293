# A numpy re-implementation of HF GptOssForCausalLM.forward (transformers' modeling_gpt_oss:
# yarn rotary tables with an untruncated correction range and the attention factor, the
# chunked-halves rotary, grouped-query attention with the per-head sinks concatenated, the row
# max subtracted and the sink column dropped, sliding-window layers (layer_types), the biased
# router's softmax over its top-k logits, the experts' interleaved gate_up with the clamped
# SwiGLU (up + 1) * gate * sigmoid(alpha * gate)) with the zoo's one addition, capacity dropping
# (first come, first served per sequence), run on the zoo model's random weights; its logits
# are compared with ONNX Runtime's. Fails beyond 1e-4 absolute.
# Usage: gpt_oss_reference.py CONFIG.json MODEL.onnx INPUTS.json ORT_OUTPUT.json
import json, math, sys
import numpy as np, onnx
from onnx import numpy_helper
cfg = json.load(open(sys.argv[1])); m = onnx.load(sys.argv[2])
W = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
inp = json.load(open(sys.argv[3])); out = json.load(open(sys.argv[4]))['outputs']['logits']
ids = np.array(inp['input_ids']['data']).reshape(inp['input_ids']['shape'])
pos = np.array(inp['position_ids']['data']).reshape(inp['position_ids']['shape'])
h=cfg['hidden_size']; H=cfg['num_attention_heads']; KV=cfg['num_key_value_heads']; d=cfg['head_dim']
E=cfg['num_local_experts']; k=cfg['num_experts_per_tok']; win=cfg['sliding_window']; types=cfg['layer_types']
eps=cfg.get('rms_norm_eps',1e-5); rs=cfg['rope_scaling']; base=cfg['rope_theta']
limit=cfg.get('swiglu_limit',7.0); alpha=1.702
def rms(x,w): return w*(x/np.sqrt((x**2).mean(-1,keepdims=True)+eps))
def lin(x,name): return x@W[name+'.weight']+W[name+'.bias']
def sigmoid(x): return 1/(1+np.exp(-x))
# yarn (transformers _compute_yarn_parameters, truncate false: the range is not rounded)
factor=rs['factor']; orig=rs['original_max_position_embeddings']
att_f=0.1*math.log(factor)+1
def cd(r): return d*math.log(orig/(r*2*math.pi))/(2*math.log(base))
lo=cd(rs['beta_fast']); hi=cd(rs['beta_slow'])
if rs.get('truncate',True): lo,hi=math.floor(lo),math.ceil(hi)
lo=max(lo,0); hi=min(hi,d-1)
if lo==hi: hi+=0.001
pf=base**(np.arange(0,d,2)/d); ext=1/pf; itp=1/(factor*pf)
ramp=np.clip((np.arange(d//2)-lo)/(hi-lo),0,1); ef=1-ramp
inv=itp*(1-ef)+ext*ef
fr=pos[...,None]*inv; cos=np.cos(fr)*att_f; sin=np.sin(fr)*att_f   # [B,S,d/2], GptOssRotaryEmbedding
def rope(x):  # _apply_rotary_emb on [B,h,S,d]
  x1,x2=x[...,:d//2],x[...,d//2:]; c=cos[:,None]; s=sin[:,None]
  return np.concatenate([x1*c-x2*s, x2*c+x1*s],-1)
B,S=ids.shape
qi=np.arange(S)[:,None]; ki=np.arange(S)[None,:]
full=np.where(ki>qi,-np.inf,0.0); sliding=np.where((ki>qi)|(qi-ki>=win),-np.inf,0.0)
x=W['model.embed_tokens.weight'][ids]
for L in range(cfg['num_hidden_layers']):
  p=f'model.layers.{L}.'; A=p+'self_attn.'
  a=rms(x,W[p+'input_layernorm.weight'])
  q=lin(a,A+'q_proj').reshape(B,S,H,d).transpose(0,2,1,3)
  kk=lin(a,A+'k_proj').reshape(B,S,KV,d).transpose(0,2,1,3)
  v=lin(a,A+'v_proj').reshape(B,S,KV,d).transpose(0,2,1,3)
  q=rope(q); kk=rope(kk)
  kk=np.repeat(kk,H//KV,axis=1); v=np.repeat(v,H//KV,axis=1)   # repeat_kv
  sc=q@kk.transpose(0,1,3,2)*d**-0.5+(sliding if types[L]=='sliding_attention' else full)
  sinks=np.broadcast_to(W[A+'sinks'].reshape(1,H,1,1),(B,H,S,1))
  comb=np.concatenate([sc,sinks],-1); comb=comb-comb.max(-1,keepdims=True)
  pr=np.exp(comb); pr/=pr.sum(-1,keepdims=True); pr=pr[...,:-1]
  o=(pr@v).transpose(0,2,1,3).reshape(B,S,H*d); x=x+lin(o,A+'o_proj')
  mm=rms(x,W[p+'post_attention_layernorm.weight']); M=p+'mlp.'
  logits=lin(mm,M+'router')                                    # [B,S,E]
  ti=np.argsort(-logits,-1,kind='stable')[...,:k]; tv=np.take_along_axis(logits,ti,-1)
  tw=np.exp(tv-tv.max(-1,keepdims=True)); tw/=tw.sum(-1,keepdims=True)
  gu_w=W[M+'experts.gate_up_proj']; gu_b=W[M+'experts.gate_up_proj_bias']
  dn_w=W[M+'experts.down_proj']; dn_b=W[M+'experts.down_proj_bias']
  C=math.ceil(k*S/E); out_moe=np.zeros_like(mm)
  for b in range(B):
    cnt=np.zeros(E,int)
    for t in range(S):
      for j in range(k):
        e=ti[b,t,j]
        if cnt[e]<C:
          gu=mm[b,t]@gu_w[e]+gu_b[e]; gate,up=gu[::2],gu[1::2]
          gate=np.minimum(gate,limit); up=np.clip(up,-limit,limit)
          glu=gate*sigmoid(gate*alpha)
          out_moe[b,t]+=tw[b,t,j]*(((up+1)*glu)@dn_w[e]+dn_b[e])
        cnt[e]+=1
  x=x+out_moe
x=rms(x,W['model.norm.weight']); logits=x@W['lm_head.weight']
ort=np.array(out['data']).reshape(out['shape'])
diff = np.abs(logits - ort).max()
print(f'gpt_oss_reference: max abs diff {diff:.3e} (max |logit| {np.abs(logits).max():.3e})')
sys.exit(0 if diff < 1e-4 else 1)
