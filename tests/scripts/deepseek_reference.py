# A numpy re-implementation of HF DeepseekV3ForCausalLM.forward (transformers'
# modeling_deepseek_v3: yarn rotary tables and mscale, interleaved decoupled RoPE, the MLA
# projections and splits, the noaux_tc router) with the zoo's one addition, capacity dropping
# (first come, first served per sequence), run on the zoo model's random weights; its logits
# are compared with ONNX Runtime's. Fails beyond 1e-4 absolute.
# Usage: deepseek_reference.py CONFIG.json MODEL.onnx INPUTS.json ORT_OUTPUT.json
import json, math, sys
import numpy as np, onnx
from onnx import numpy_helper
cfg = json.load(open(sys.argv[1])); m = onnx.load(sys.argv[2])
W = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in m.graph.initializer}
inp = json.load(open(sys.argv[3])); out = json.load(open(sys.argv[4]))['outputs']['logits']
ids = np.array(inp['input_ids']['data']).reshape(inp['input_ids']['shape'])
pos = np.array(inp['position_ids']['data']).reshape(inp['position_ids']['shape'])
h=cfg['hidden_size']; H=cfg['num_attention_heads']; nope=cfg['qk_nope_head_dim']; rope=cfg['qk_rope_head_dim']; vd=cfg['v_head_dim']
kr=cfg['kv_lora_rank']; E=cfg['n_routed_experts']; k=cfg['num_experts_per_tok']; G=cfg['n_group']; TG=cfg['topk_group']
eps=cfg.get('rms_norm_eps',1e-6); rs=cfg['rope_scaling']; base=cfg.get('rope_theta',10000)
def rms(x,w): return w*(x/np.sqrt((x**2).mean(-1,keepdims=True)+eps))
def lin(x,name): return x@W[name+'.weight']
# yarn (transformers _compute_yarn_parameters)
dim=rope; factor=rs['factor']; orig=rs['original_max_position_embeddings']
def gm(s,ms=1): return 1.0 if s<=1 else 0.1*ms*math.log(s)+1
att_f = gm(factor,rs['mscale'])/gm(factor,rs['mscale_all_dim'])
def cd(r): return dim*math.log(orig/(r*2*math.pi))/(2*math.log(base))
lo=max(math.floor(cd(rs['beta_fast'])),0); hi=min(math.ceil(cd(rs['beta_slow'])),dim-1)
if lo==hi: hi+=0.001
pf=base**(np.arange(0,dim,2)/dim); ext=1/pf; itp=1/(factor*pf)
ramp=np.clip((np.arange(dim//2)-lo)/(hi-lo),0,1); ef=1-ramp
inv=itp*(1-ef)+ext*ef
fr=pos[...,None]*inv; emb=np.concatenate([fr,fr],-1); cos=np.cos(emb)*att_f; sin=np.sin(emb)*att_f
scaling=(nope+rope)**-0.5*gm(factor,rs['mscale_all_dim'])**2
def rot_half(x): return np.concatenate([-x[...,x.shape[-1]//2:], x[...,:x.shape[-1]//2]],-1)
def interleave_rope(x):  # apply_rotary_pos_emb_interleave on [b,h,s,d]
  b,hh,s,d=x.shape; x=x.reshape(b,hh,s,d//2,2).transpose(0,1,2,4,3).reshape(b,hh,s,d)
  return x*cos[:,None]+rot_half(x)*sin[:,None]
B,S=ids.shape
x=W['model.embed_tokens.weight'][ids]
mask=np.where(np.arange(S)[None,:]>np.arange(S)[:,None],-np.inf,0.0)
for L in range(cfg['num_hidden_layers']):
  p=f'model.layers.{L}.'
  a=rms(x,W[p+'input_layernorm.weight']); A=p+'self_attn.'
  q=lin(rms(lin(a,A+'q_a_proj'),W[A+'q_a_layernorm.weight']),A+'q_b_proj').reshape(B,S,H,nope+rope).transpose(0,2,1,3)
  qp,qr=q[...,:nope],q[...,nope:]
  ckv=lin(a,A+'kv_a_proj_with_mqa'); kp,kr_=ckv[...,:kr],ckv[...,kr:]
  kp=lin(rms(kp,W[A+'kv_a_layernorm.weight']),A+'kv_b_proj').reshape(B,S,H,nope+vd).transpose(0,2,1,3)
  kp,v=kp[...,:nope],kp[...,nope:]
  kr_=kr_.reshape(B,1,S,rope)
  qr=interleave_rope(qr); kr_=interleave_rope(kr_); kr_=np.broadcast_to(kr_,(B,H,S,rope))
  Q=np.concatenate([qp,qr],-1); K=np.concatenate([kp,kr_],-1)
  sc=Q@K.transpose(0,1,3,2)*scaling+mask; sc=np.exp(sc-sc.max(-1,keepdims=True)); sc/=sc.sum(-1,keepdims=True)
  o=(sc@v).transpose(0,2,1,3).reshape(B,S,H*vd); x=x+lin(o,A+'o_proj')
  mm=rms(x,W[p+'post_attention_layernorm.weight']); M=p+'mlp.'
  def mlp(y,pre): g=lin(y,pre+'gate_proj'); return lin(g/(1+np.exp(-g))*lin(y,pre+'up_proj'),pre+'down_proj')
  if L<cfg['first_k_dense_replace']: x=x+mlp(mm,M); continue
  scores=1/(1+np.exp(-(mm@W[M+'gate.weight'])))        # [B,S,E]
  ch=scores+W[M+'gate.e_score_correction_bias']
  gs=np.sort(ch.reshape(B,S,G,E//G),-1)[...,-2:].sum(-1)
  gi=np.argsort(-gs,-1)[...,:TG]; gmask=np.zeros((B,S,G)); np.put_along_axis(gmask,gi,1,-1)
  ch=np.where(np.repeat(gmask,E//G,-1)>0,ch,0.0)
  ti=np.argsort(-ch,-1,kind='stable')[...,:k]; tw=np.take_along_axis(scores,ti,-1)
  tw=tw/(tw.sum(-1,keepdims=True)+1e-20)*cfg['routed_scaling_factor']
  C=math.ceil(k*S/E); out_moe=np.zeros_like(mm)
  for b in range(B):
    cnt=np.zeros(E,int)
    for t in range(S):
      for j in range(k):
        e=ti[b,t,j]
        if cnt[e]<C:
          y=mm[b,t]; g=y@W[M+'experts.w1'][e]; u=y@W[M+'experts.w3'][e]
          out_moe[b,t]+=tw[b,t,j]*((g/(1+np.exp(-g))*u)@W[M+'experts.w2'][e])
        cnt[e]+=1
  x=x+out_moe+mlp(mm,M+'shared_experts.')
x=rms(x,W['model.norm.weight']); logits=x@W['lm_head.weight']
ort=np.array(out['data']).reshape(out['shape'])
diff = np.abs(logits - ort).max()
print(f'deepseek_reference: max abs diff {diff:.3e} (max |logit| {np.abs(logits).max():.3e})')
sys.exit(0 if diff < 1e-4 else 1)
