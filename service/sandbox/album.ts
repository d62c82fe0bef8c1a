/**
 * Albums as a phone sends them (issue #13): first an `albumMessage { expectedImageCount, expectedVideoCount }`, then
 * each image or video as its own message wrapped in `associatedChildMessage`, whose `messageContextInfo` names the
 * album in a `messageAssociation` of type MEDIA_ALBUM with the album's key as the sender wrote it (`fromMe: true`,
 * the chat it was sent to) and the item's index. Field names from WAProto (AlbumMessage, MessageAssociation,
 * FutureProofMessage); the sender-side key is what Baileys rc14 puts there for `albumParentKey`
 * (lib/Utils/messages.js generateWAMessageContent).
 */
import { proto } from '@whiskeysockets/baileys';

/** Most items one album takes here (WhatsApp groups up to 30 media of one send). */
export const MAX_ALBUM_ITEMS = 30;

/** The album message announcing how many images and videos follow. */
export function albumParent(counts: { images: number; videos: number }, contextInfo?: proto.IContextInfo): proto.IMessage {
  return {
    albumMessage: {
      expectedImageCount: counts.images,
      expectedVideoCount: counts.videos,
      ...(contextInfo ? { contextInfo } : {}),
    },
  };
}

/**
 * One item of the album `parentId` sent to `remoteJid` (a phone-number JID or a group JID): the media message
 * (`imageMessage` or `videoMessage`) inside `associatedChildMessage`, linked to its album.
 */
export function albumChild(media: proto.IMessage, remoteJid: string, parentId: string, index: number): proto.IMessage {
  return {
    associatedChildMessage: {
      message: {
        ...media,
        messageContextInfo: {
          messageAssociation: {
            associationType: proto.MessageAssociation.AssociationType.MEDIA_ALBUM,
            parentMessageKey: { remoteJid, fromMe: true, id: parentId },
            messageIndex: index,
          },
        },
      },
    },
  };
}
